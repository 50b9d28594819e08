//! Whose rules a session follows where SQLite and PostgreSQL give the same SQL different
//! answers. The sqllogictest corpus is SQLite's, so the REPL, scripts and the test suites
//! follow SQLite; PostgreSQL's clients expect PostgreSQL, so `rowdex serve` follows it. Each
//! rule that differs asks the session's [`Semantics`] in one place, rather than having a code
//! path per entry point:
//!
//! | rule | SQLite | PostgreSQL |
//! |---|---|---|
//! | division (or modulo) by zero | NULL | error, SQLSTATE 22012 |

/// Which database's rules a session follows where the two differ (see the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Semantics {
    /// SQLite's: the REPL, `rowdex -c`/`-f`, the sqllogictest suites, embedding programs.
    #[default]
    Sqlite,
    /// PostgreSQL's: sessions served over the PostgreSQL wire protocol (`rowdex serve`).
    PostgreSql,
}

impl Semantics {
    /// Whether a division by zero yields NULL (else it fails the statement).
    pub fn division_by_zero_is_null(self) -> bool {
        self == Semantics::Sqlite
    }

    /// The setting's value as `SHOW rowdex.semantics` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Semantics::Sqlite => "sqlite",
            Semantics::PostgreSql => "postgresql",
        }
    }

    /// The semantics a setting's value names (`sqlite`, `postgresql` or `postgres`).
    pub fn from_name(name: &str) -> Option<Semantics> {
        match name.trim().to_lowercase().as_str() {
            "sqlite" => Some(Semantics::Sqlite),
            "postgresql" | "postgres" => Some(Semantics::PostgreSql),
            _ => None,
        }
    }
}
