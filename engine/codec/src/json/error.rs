//! Why text is not a JSON value rowdex can hold, worded as PostgreSQL words it.

/// How deeply arrays and objects may nest: deeper text is refused rather than risking the
/// stack of the thread that reads it.
pub const MAX_JSON_DEPTH: usize = 1000;

/// Why text is not a JSON value rowdex can hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// The text is not JSON; the detail says where (PostgreSQL's 22P02).
    Syntax { detail: String },
    /// `\u0000`, which a `jsonb` (or text extracted from JSON) cannot hold (22P05).
    UnsupportedEscape { detail: String },
    /// A number beyond the range of `numeric` (22003).
    NumberOutOfRange,
    /// Arrays or objects nested deeper than [`MAX_JSON_DEPTH`] (54001).
    TooDeep,
    /// A path step into an array that is no integer (`jsonb_set`'s path; 22P02).
    PathElementNotInteger { position: usize, element: String },
}

impl JsonError {
    /// The error's message, as PostgreSQL words it.
    pub fn message(&self) -> String {
        match self {
            JsonError::Syntax { .. } => "invalid input syntax for type json".to_string(),
            JsonError::UnsupportedEscape { .. } => {
                "unsupported Unicode escape sequence".to_string()
            }
            JsonError::NumberOutOfRange => "value overflows numeric format".to_string(),
            JsonError::TooDeep => {
                format!("JSON nests arrays and objects deeper than {MAX_JSON_DEPTH} levels")
            }
            JsonError::PathElementNotInteger { position, element } => {
                format!("path element at position {position} is not an integer: \"{element}\"")
            }
        }
    }

    /// Where or why, for the errors that say more than their message.
    pub fn detail(&self) -> Option<&str> {
        match self {
            JsonError::Syntax { detail } | JsonError::UnsupportedEscape { detail } => Some(detail),
            JsonError::NumberOutOfRange
            | JsonError::TooDeep
            | JsonError::PathElementNotInteger { .. } => None,
        }
    }
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.detail() {
            Some(detail) => write!(f, "{}: {detail}", self.message()),
            None => f.write_str(&self.message()),
        }
    }
}

impl std::error::Error for JsonError {}
