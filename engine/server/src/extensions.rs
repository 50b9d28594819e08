//! `CREATE EXTENSION`: the one extension rowdex has, `pg_stat_statements`, is built in, so
//! creating it (as monitoring tools and setup scripts do) succeeds and changes nothing; any
//! other is refused as PostgreSQL 15 refuses an extension it has no control file for.

/// The extensions rowdex has, with the version PostgreSQL 15 ships (shown by `pg_extension`).
pub const EXTENSIONS: [(&str, &str); 1] = [("pg_stat_statements", "1.10")];

/// Why a `CREATE EXTENSION` statement is refused: its SQLSTATE and message.
pub type Refusal = (&'static str, String);

/// Runs `CREATE EXTENSION [IF NOT EXISTS] name [WITH ...]`: Ok for a built-in extension.
pub fn create_extension(sql: &str) -> Result<(), Refusal> {
    let words: Vec<&str> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect();
    let rest = match words.as_slice() {
        [create, extension, rest @ ..]
            if create.eq_ignore_ascii_case("create")
                && extension.eq_ignore_ascii_case("extension") =>
        {
            rest
        }
        _ => return Err(("42601", "not a CREATE EXTENSION statement".to_string())),
    };
    let name = match rest {
        [if_, not, exists, name, ..]
            if if_.eq_ignore_ascii_case("if")
                && not.eq_ignore_ascii_case("not")
                && exists.eq_ignore_ascii_case("exists") =>
        {
            name
        }
        [name, ..] => name,
        [] => return Err(("42601", "syntax error at end of input".to_string())),
    };
    let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.to_string(),
        None => name.to_lowercase(),
    };
    if EXTENSIONS.iter().any(|(known, _)| *known == name) {
        return Ok(());
    }
    Err((
        "58P01",
        format!(
            "could not open extension control file \"/usr/share/postgresql/15/extension/{name}.control\": No such file or directory"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::create_extension;

    #[test]
    fn the_built_in_extension_is_created_and_others_refused() {
        assert!(create_extension("CREATE EXTENSION pg_stat_statements").is_ok());
        assert!(create_extension("create extension if not exists PG_STAT_STATEMENTS;").is_ok());
        assert!(
            create_extension("CREATE EXTENSION \"pg_stat_statements\" WITH SCHEMA public").is_ok()
        );
        let (code, message) = create_extension("CREATE EXTENSION postgis").expect_err("unknown");
        assert_eq!(code, "58P01");
        assert!(message.contains("postgis.control"), "{message}");
    }
}
