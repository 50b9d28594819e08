//! The outcome of running one file.

/// Records (statements and queries) that ran, and what went wrong in those that failed.
/// Records skipped by `skipif` / `onlyif` count as neither.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    pub records_passed: usize,
    pub records_failed: usize,
    /// One message per failed record (or per problem that stopped the file from running).
    pub failures: Vec<String>,
}

impl FileReport {
    pub fn total(&self) -> usize {
        self.records_passed + self.records_failed
    }

    pub fn is_pass(&self) -> bool {
        self.records_failed == 0
    }

    /// A report for a file that could not run at all: that counts as one failed record, so a
    /// broken file is never mistaken for an empty one.
    pub fn broken(message: String) -> FileReport {
        FileReport {
            records_passed: 0,
            records_failed: 1,
            failures: vec![message],
        }
    }
}
