//! Keeping fjall's journal short, so that opening a database does not replay a long one.
//!
//! fjall 3.1 reads the whole active journal on every open, entry by entry, whether or not its
//! entries are already in tables: each entry costs about 2 µs (a lookup of its keyspace's name
//! in fjall's meta tree), so a 585 MB journal behind a 10M-row table took 22 s to open. fjall
//! seals the active journal, and deletes it once every entry is in tables, only when a flush of
//! a memtable starts while the journal is past 64 MB (`journal_writer.pos() > 64_000_000` in
//! its worker). It offers no call to seal it sooner, and the ingestion of a large batch flushes
//! the memtable without that check, so the journal of a bulk load grows without bound.
//!
//! [`checkpoint`] therefore, when the active journal holds more than [`TRIM_MIN_BYTES`], flushes
//! the memtables of the keyspaces holding data and pushes the journal past fjall's mark with one padding value in a
//! keyspace of its own (overwritten with an empty value at once, so that no table keeps it) and
//! flushes that keyspace: fjall seals the journal, writes the tiny memtable, and deletes the
//! sealed journal. The padding costs a sequential write of at most 64 MB (copied three times on
//! its way into the page cache) and the fsync of the sealed journal: 0.2-0.6 s on the 2-core
//! machine, paid once per [`TRIM_MIN_BYTES`] or more of journaled writes (a thousand rows or
//! so, which took longer to write), by the close or checkpoint that follows them. A shorter
//! journal is left for the next open to replay (at most 40-80 ms). [`seal_if_long`] asks
//! for the same seal without padding once a journal is past the mark, after a bulk ingestion.
//!
//! These are fjall 3.1.13's private rules (the workspace pins that version); the store's test
//! `a_clean_close_leaves_a_short_journal` fails if a close leaves a journal longer than
//! [`TRIM_MIN_BYTES`], so an upgrade that changes them is noticed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fjall::{Database, Keyspace};

use crate::error::Result;

/// Name of the keyspace that holds only the padding key.
pub(super) const JOURNAL_KEYSPACE: &str = "journal-trim";

/// The single key of [`JOURNAL_KEYSPACE`].
const PAD_KEY: &[u8] = b"pad";

/// Where fjall seals the active journal at the next flush (its worker compares the journal's
/// write position with this number).
const SEAL_PAST_BYTES: u64 = 64_000_000;

/// A checkpoint leaves a journal up to this long in place: replaying it costs 40-80 ms, and
/// trimming it costs more than that.
pub const TRIM_MIN_BYTES: u64 = 1024 * 1024;

/// When the active journal is longer than [`TRIM_MIN_BYTES`]: flushes `data`'s memtable into
/// tables and has fjall seal and delete the journal, so that the next open replays (almost)
/// nothing. A shorter journal is left as it is: replaying it costs less than a flush.
///
/// fjall's one worker (see `FjallStore::open`) flushes and compacts in turn, so a flush may
/// wait behind a compaction of many seconds. Waits end at `wait`: a close passes
/// [`CLOSE_WAIT`] and then leaves the journal to the next open rather than keep its process
/// alive, and a worker that stopped (a failed flush poisons the database) never hangs a close.
/// Returns whether the journal is short now.
pub(super) fn checkpoint(
    db: &Database,
    dir: &Path,
    keyspaces: (&[Keyspace], &Keyspace),
    wait: Duration,
) -> Result<bool> {
    let (data, padding) = keyspaces;
    if active_journal_bytes(dir)? <= TRIM_MIN_BYTES {
        return Ok(true);
    }
    let deadline = Instant::now() + wait;
    // The journal can go only once the data it holds is in tables.
    if !flush_memtables(data, deadline)? {
        return Ok(false);
    }
    // The first attempt pads by the journal's allocated size; should the file system overstate
    // it (no holes), the second pads a whole journal's worth.
    for attempt in 0..2 {
        let written = active_journal_bytes(dir)?;
        if written <= TRIM_MIN_BYTES {
            return Ok(true);
        }
        let pad_len = match attempt {
            0 => (SEAL_PAST_BYTES + 2 * BLOCK_BYTES).saturating_sub(written),
            _ => SEAL_PAST_BYTES + BLOCK_BYTES,
        };
        padding.insert(PAD_KEY, vec![0u8; usize::try_from(pad_len).unwrap_or(0)])?;
        padding.insert(PAD_KEY, Vec::<u8>::new())?;
        // Writes that came in meanwhile are in the sealed journal too; fjall deletes it only
        // once they are in tables.
        if !flush_memtable(padding, deadline)? || !flush_memtables(data, deadline)? {
            return Ok(false);
        }
        while db.journal_count() > 1 && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
    }
    Ok(active_journal_bytes(dir)? <= TRIM_MIN_BYTES)
}

/// After a bulk ingestion (which flushes the memtable without fjall's journal check): if the
/// active journal is past fjall's mark, an empty write and a flush of [`JOURNAL_KEYSPACE`]
/// have fjall seal it now. Does not wait for the flush.
pub(super) fn seal_if_long(dir: &Path, padding: &Keyspace) -> Result<()> {
    if active_journal_bytes(dir)? <= SEAL_PAST_BYTES {
        return Ok(());
    }
    padding.insert(PAD_KEY, Vec::<u8>::new())?;
    padding.rotate_memtable()?;
    Ok(())
}

/// The longest an explicit checkpoint waits for fjall's worker.
pub(super) const CHECKPOINT_WAIT: Duration = Duration::from_secs(60);

/// The longest a close waits for it.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How often a checkpoint looks whether the worker is done.
const POLL: Duration = Duration::from_millis(1);

/// [`flush_memtable`] of each of `keyspaces`.
fn flush_memtables(keyspaces: &[Keyspace], deadline: Instant) -> Result<bool> {
    for keyspace in keyspaces {
        if !flush_memtable(keyspace, deadline)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Seals `keyspace`'s memtable (if it holds anything) and waits until the worker has written it
/// into a table; false if `deadline` came first.
fn flush_memtable(keyspace: &Keyspace, deadline: Instant) -> Result<bool> {
    keyspace.rotate_memtable()?;
    while keyspace.sealed_memtable_count() > 0 {
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(POLL);
    }
    Ok(true)
}

/// The file system's allocation unit, by which [`written_bytes`] may overstate a journal.
const BLOCK_BYTES: u64 = 4096;

/// How much of the active journal (the highest-numbered `N.jnl` in the database directory) has
/// been written. fjall sizes a new journal file to 64 MiB up front without writing it, so the
/// file's length says nothing; the blocks the file system allocated for it do (the unwritten
/// part is a hole). A file system without holes overstates it, which only means no trim.
fn active_journal_bytes(dir: &Path) -> Result<u64> {
    let Some(path) = active_journal(dir)? else {
        return Ok(0);
    };
    Ok(written_bytes(&path)?)
}

fn active_journal(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut newest: Option<(u64, PathBuf)> = None;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let number = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".jnl"))
            .and_then(|stem| stem.parse::<u64>().ok());
        if let Some(number) = number
            && newest.as_ref().is_none_or(|(n, _)| number > *n)
        {
            newest = Some((number, path));
        }
    }
    Ok(newest.map(|(_, path)| path))
}

#[cfg(unix)]
fn written_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path)?;
    Ok(metadata.len().min(metadata.blocks().saturating_mul(512)))
}

#[cfg(not(unix))]
fn written_bytes(path: &Path) -> std::io::Result<u64> {
    Ok(std::fs::metadata(path)?.len())
}
