//! Rewrites SQLite corpus text into what the sqllogictest crate parses and runs correctly.
//!
//! Two things differ from the crate's dialect, and one from the engines it names:
//! - condition lines may carry a trailing comment (`skipif mysql # not compatible`), which the
//!   crate rejects: the comment is dropped;
//! - `onlyif mssql` followed by `halt` means "stop here on mssql", but the crate attaches the
//!   condition to the next statement instead and halts every engine. Conditional halts are
//!   decided here, for this engine: dropped when they do not apply, made unconditional when they
//!   do.
//! - `onlyif sqlite` records run: rowdex answers them as SQLite does.
//!
//! Lines are replaced rather than removed, so locations in failure messages stay the file's.

/// The engine name the runner matches `skipif` / `onlyif` labels against. It is none of the
/// engines SQLite's corpus names, so unguarded records run and `onlyif <engine>` ones are
/// skipped (but `onlyif sqlite`, see [`SQLITE_ONLY`]).
pub const ENGINE_NAME: &str = "rowdex";

/// Records only SQLite answers as written (`x IN ()`, `x IN table`, ...): rowdex claims
/// SQLite's behaviour there and runs them as its own. (`skipif sqlite` still skips nothing for
/// rowdex: the corpus uses it to stop engines other than SQLite before SQLite-only parts.)
const SQLITE_ONLY: &str = "onlyif sqlite";

/// The corpus text with condition comments stripped and conditional halts resolved.
pub(crate) fn sqlite_test_script(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    // Condition lines since the last record, as (index in `out`, condition words).
    let mut pending: Vec<(usize, String)> = Vec::new();
    let mut in_record = false;
    for line in text.lines() {
        if in_record {
            // A record's SQL and results end at the first empty line.
            in_record = !line.trim().is_empty();
            out.push(line.to_string());
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("skipif" | "onlyif") => {
                let mut condition = strip_comment(line);
                if condition == SQLITE_ONLY {
                    // rowdex claims SQLite's behaviour for these records.
                    condition = format!("onlyif {ENGINE_NAME}");
                }
                pending.push((out.len(), condition.clone()));
                out.push(condition);
            }
            Some("halt") if words.len() == 1 => {
                let applies = pending.iter().all(|(_, c)| condition_holds(c));
                for (index, condition) in pending.drain(..) {
                    out[index] = format!("# {condition} (resolved for {ENGINE_NAME})");
                }
                out.push(if applies {
                    line.to_string()
                } else {
                    "# halt (not for this engine)".to_string()
                });
            }
            Some("statement" | "query" | "system" | "let") => {
                pending.clear();
                in_record = true;
                out.push(line.to_string());
            }
            _ => out.push(line.to_string()),
        }
    }
    let mut script = out.join("\n");
    script.push('\n');
    script
}

/// `skipif mysql # not compatible` → `skipif mysql`.
fn strip_comment(line: &str) -> String {
    let code = line.split_once('#').map_or(line, |(code, _)| code);
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a condition line lets the following record run on this engine.
fn condition_holds(condition: &str) -> bool {
    match condition.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["onlyif", label] => *label == ENGINE_NAME,
        ["skipif", label] => *label != ENGINE_NAME,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_condition_comments() {
        let script =
            sqlite_test_script("skipif mysql # not compatible\nquery I\nSELECT 1\n----\n1\n");
        assert!(script.starts_with("skipif mysql\nquery I\n"), "{script}");
    }

    #[test]
    fn resolves_conditional_halts() {
        let text = "onlyif mssql\nhalt\n\nstatement ok\nSELECT 1\n\nskipif mssql\nhalt\n";
        let lines: Vec<String> = sqlite_test_script(text).lines().map(String::from).collect();
        assert_eq!(lines[1], "# halt (not for this engine)");
        assert!(lines[0].starts_with('#'));
        assert!(lines[6].starts_with('#'));
        assert_eq!(lines[7], "halt");
    }

    #[test]
    fn sqlite_only_records_run() {
        let script = sqlite_test_script(
            "onlyif sqlite # empty RHS\nquery I\nSELECT 1 IN ()\n----\n0\n\nonlyif sqlite\nhalt\n",
        );
        assert!(script.starts_with("onlyif rowdex\nquery I\n"), "{script}");
        assert!(script.ends_with("\nhalt\n"), "{script}");
    }

    #[test]
    fn leaves_record_bodies_alone() {
        let text = "query T\nSELECT 'halt'\n----\nhalt\n\nhalt\n";
        assert_eq!(sqlite_test_script(text), text);
    }
}
