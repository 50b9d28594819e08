//! The I/O counters of cursors and intersections.

/// I/O done so far by a cursor or an intersection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntersectionStats {
    /// Entries read by page reads.
    pub entries_read: u64,
    /// Number of page reads (each opens an iterator in the backend).
    pub seeks: u64,
    /// Entry keys looked up to check candidates against checked inputs.
    pub checks: u64,
}

impl std::ops::AddAssign for IntersectionStats {
    fn add_assign(&mut self, other: IntersectionStats) {
        self.entries_read += other.entries_read;
        self.seeks += other.seeks;
        self.checks += other.checks;
    }
}
