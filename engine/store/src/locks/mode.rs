//! Who holds a row lock, and how: the modes and which of them go together.

/// Who holds a lock: a transaction's id.
pub type Owner = u64;

/// How a key is locked. Shared locks (`FOR SHARE`, `FOR KEY SHARE`) are held together;
/// an exclusive one (a write, `FOR UPDATE`, `FOR NO KEY UPDATE`) alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    Shared,
    Exclusive,
}

impl LockMode {
    pub(crate) fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }
}
