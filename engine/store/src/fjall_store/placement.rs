//! Key prefixes kept in keyspaces of their own, each created with its [`StorageOptions`]
//! (HBase's per-family storage attributes: compression, block size, bloom filter, block
//! encoding, table and memtable sizes). Everything else lives in the data keyspace.
//!
//! The [`Layout`] says which keyspace holds each placed prefix, and since when: moving a
//! prefix (placing it, changing its options, or giving it back to the data keyspace) copies
//! its entries and deletes them from where they were in one fjall batch, at one sequence
//! number, so a reader whose snapshot predates the move reads the old keyspace and one after
//! it the new. A write goes to the keyspace holding its key now; a fjall batch spans
//! keyspaces, so a commit stays atomic wherever its keys live. A range read is cut where a
//! placed prefix starts and ends, and the pieces read in order from their keyspaces.
//!
//! The layout is kept in the `placements` keyspace (prefix → keyspace name and options),
//! written in the same batch as the move. A keyspace no placement names any more (given back,
//! or left by a crash before its move committed) is deleted at the next open: one a running
//! reader may still hold is never deleted under it.

use std::sync::Arc;

use fjall::config::{
    BlockSizePolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry, HashRatioPolicy,
    RestartIntervalPolicy,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, Readable, SeqNo};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::range::KeyRange;
use crate::storage_options::{BlockEncoding, Compression, StorageOptions};

/// The keyspace holding the layout.
pub(super) const PLACEMENTS_KEYSPACE: &str = "placements";

/// What names a placed keyspace: this, the prefix in hex, and a counter.
const PLACED_NAME_START: &str = "p-";

/// A prefix's record in [`PLACEMENTS_KEYSPACE`].
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    keyspace: String,
    options: StorageOptions,
}

/// Who held one placed prefix, from which sequence number on.
#[derive(Clone)]
struct Holder {
    since: SeqNo,
    /// None: the data keyspace.
    keyspace: Option<(Keyspace, StorageOptions)>,
}

/// One placed prefix with its holders, oldest first (only the last after an open).
#[derive(Clone)]
struct Placed {
    prefix: Vec<u8>,
    holders: Vec<Holder>,
}

impl Placed {
    fn holder_at(&self, seqno: SeqNo) -> Option<&Holder> {
        self.holders
            .iter()
            .rev()
            .find(|holder| holder.since <= seqno)
    }
}

/// Which keyspace holds each placed prefix (see the module documentation).
#[derive(Clone, Default)]
pub(super) struct Layout {
    /// Sorted by prefix; no prefix is a prefix of another.
    placed: Vec<Placed>,
}

/// What holds a key or a piece of a range: the data keyspace or a placed one.
pub(super) enum Owner<'a> {
    Data,
    Placed(&'a Keyspace),
}

impl<'a> Owner<'a> {
    /// The keyspace itself (`data`: the data keyspace).
    pub(super) fn keyspace<'k>(self, data: &'k Keyspace) -> &'k Keyspace
    where
        'a: 'k,
    {
        match self {
            Owner::Data => data,
            Owner::Placed(keyspace) => keyspace,
        }
    }
}

impl Layout {
    /// Whether no prefix was ever placed (every read goes to the data keyspace).
    pub(super) fn is_empty(&self) -> bool {
        self.placed.is_empty()
    }

    /// The placed prefix `key` falls under, if any.
    fn placed_of(&self, key: &[u8]) -> Option<&Placed> {
        let at = self
            .placed
            .partition_point(|placed| placed.prefix.as_slice() <= key);
        let placed = self.placed.get(at.checked_sub(1)?)?;
        key.starts_with(&placed.prefix).then_some(placed)
    }

    /// What holds `key` for a reader at `seqno` (`SeqNo::MAX`: a writer, now).
    pub(super) fn owner(&self, key: &[u8], seqno: SeqNo) -> Owner<'_> {
        match self
            .placed_of(key)
            .and_then(|placed| placed.holder_at(seqno))
            .and_then(|holder| holder.keyspace.as_ref())
        {
            Some((keyspace, _)) => Owner::Placed(keyspace),
            None => Owner::Data,
        }
    }

    /// `range` cut at the placed prefixes' bounds, in key order, each piece with what holds it
    /// for a reader at `seqno`.
    pub(super) fn pieces(&self, range: &KeyRange, seqno: SeqNo) -> Vec<(KeyRange, Owner<'_>)> {
        let mut pieces = Vec::new();
        let mut cursor = range.start.clone();
        let before_end = |key: &[u8]| range.end.as_deref().is_none_or(|end| key < end);
        for placed in &self.placed {
            let placed_range = KeyRange::prefix(&placed.prefix);
            if placed_range
                .end
                .as_deref()
                .is_some_and(|end| end <= cursor.as_slice())
            {
                continue;
            }
            if !before_end(&placed.prefix) {
                break;
            }
            if cursor < placed.prefix {
                pieces.push((
                    KeyRange::new(cursor.clone(), Some(placed.prefix.clone())),
                    Owner::Data,
                ));
                cursor = placed.prefix.clone();
            }
            let end = match (&placed_range.end, &range.end) {
                (Some(a), Some(b)) => Some(a.min(b).clone()),
                (Some(a), None) => Some(a.clone()),
                (None, b) => b.clone(),
            };
            let owner = match placed
                .holder_at(seqno)
                .and_then(|holder| holder.keyspace.as_ref())
            {
                Some((keyspace, _)) => Owner::Placed(keyspace),
                None => Owner::Data,
            };
            pieces.push((KeyRange::new(cursor.clone(), end.clone()), owner));
            match end {
                Some(end) => cursor = end,
                None => return pieces,
            }
        }
        if before_end(&cursor) {
            pieces.push((KeyRange::new(cursor, range.end.clone()), Owner::Data));
        }
        pieces
    }

    /// Every keyspace a placed prefix holds now (to flush, compact and measure).
    pub(super) fn keyspaces(&self) -> impl Iterator<Item = &Keyspace> {
        self.placed.iter().filter_map(|placed| {
            placed
                .holders
                .last()
                .and_then(|holder| holder.keyspace.as_ref())
                .map(|(keyspace, _)| keyspace)
        })
    }

    /// The memtable size the options of the placed keyspace `keyspace` ask for.
    pub(super) fn memtable_limit(&self, keyspace: &Keyspace) -> Option<u64> {
        self.placed.iter().find_map(|placed| {
            let (held, options) = placed.holders.last()?.keyspace.as_ref()?;
            (held.id() == keyspace.id()).then_some(options.memtable_size)?
        })
    }

    /// The keyspaces to sweep, each with its period (the shortest its prefixes ask for).
    pub(super) fn sweeps(&self) -> Vec<(Keyspace, std::time::Duration)> {
        let mut sweeps: Vec<(Keyspace, std::time::Duration)> = Vec::new();
        for placed in &self.placed {
            let Some((keyspace, options)) = placed.holders.last().and_then(|h| h.keyspace.as_ref())
            else {
                continue;
            };
            let Some(seconds) = options.sweep_seconds else {
                continue;
            };
            let period = std::time::Duration::from_secs(seconds.max(1));
            match sweeps.iter_mut().find(|(k, _)| k.id() == keyspace.id()) {
                Some((_, held)) => *held = (*held).min(period),
                None => sweeps.push((keyspace.clone(), period)),
            }
        }
        sweeps
    }

    /// Every placed prefix with its options now.
    pub(super) fn placements(&self) -> Vec<(Vec<u8>, StorageOptions)> {
        self.placed
            .iter()
            .filter_map(|placed| {
                let (_, options) = placed.holders.last()?.keyspace.as_ref()?;
                Some((placed.prefix.clone(), options.clone()))
            })
            .collect()
    }

    /// The layout with `prefix` held by `keyspace` (None: the data keyspace) from `since` on.
    fn moved(
        &self,
        prefix: &[u8],
        keyspace: Option<(Keyspace, StorageOptions)>,
        since: SeqNo,
    ) -> Layout {
        let mut layout = self.clone();
        let holder = Holder { since, keyspace };
        match layout
            .placed
            .binary_search_by(|placed| placed.prefix.as_slice().cmp(prefix))
        {
            Ok(at) => layout.placed[at].holders.push(holder),
            Err(at) => layout.placed.insert(
                at,
                Placed {
                    prefix: prefix.to_vec(),
                    holders: vec![
                        Holder {
                            since: 0,
                            keyspace: None,
                        },
                        holder,
                    ],
                },
            ),
        }
        layout
    }
}

/// Opens the layout kept in `placements`, and deletes the placed keyspaces it does not name.
pub(super) fn open_layout(
    db: &Database,
    placements: &Keyspace,
    options_of: impl Fn(&StorageOptions) -> KeyspaceCreateOptions,
) -> Result<Layout> {
    let mut layout = Layout::default();
    let mut named = Vec::new();
    for entry in placements.iter() {
        let (prefix, value) = entry.into_inner()?;
        let record: Record =
            serde_json::from_slice(&value).map_err(|error| StoreError::Corrupt {
                what: "a placement",
                reason: error.to_string(),
            })?;
        let keyspace = db.keyspace(&record.keyspace, || options_of(&record.options))?;
        named.push(record.keyspace);
        layout.placed.push(Placed {
            prefix: prefix.to_vec(),
            holders: vec![Holder {
                since: 0,
                keyspace: Some((keyspace, record.options)),
            }],
        });
    }
    for name in db.list_keyspace_names() {
        let name: &str = &name;
        if name.starts_with(PLACED_NAME_START) && !named.iter().any(|n| n == name) {
            let keyspace = db.keyspace(name, KeyspaceCreateOptions::default)?;
            db.delete_keyspace(keyspace)?;
        }
    }
    Ok(layout)
}

fn encode(record: &Record) -> Result<Vec<u8>> {
    serde_json::to_vec(record).map_err(|error| StoreError::Corrupt {
        what: "a placement",
        reason: error.to_string(),
    })
}

/// A keyspace name for `prefix` no keyspace of `db` has.
fn fresh_name(db: &Database, prefix: &[u8]) -> String {
    let hex: String = prefix.iter().map(|byte| format!("{byte:02x}")).collect();
    (0u32..)
        .map(|n| format!("{PLACED_NAME_START}{hex}-{n}"))
        .find(|name| !db.keyspace_exists(name))
        .unwrap_or_default()
}

/// Moves the entries under `prefix` to a keyspace with `options` (to the data keyspace when
/// they are the defaults): copied and deleted in one batch, with the layout's record. Returns
/// the layout from then on. The caller holds the store's commit lock and keeps new readers
/// out until the returned layout is in place.
pub(super) fn place(
    db: &Database,
    data: &Keyspace,
    placements: &Keyspace,
    layout: &Layout,
    prefix: &[u8],
    options: &StorageOptions,
    options_of: impl Fn(&StorageOptions) -> KeyspaceCreateOptions,
) -> Result<Layout> {
    let current = layout
        .placed_of(prefix)
        .filter(|placed| placed.prefix == prefix)
        .and_then(|placed| placed.holders.last())
        .and_then(|holder| holder.keyspace.clone());
    if layout
        .placed_of(prefix)
        .is_some_and(|placed| placed.prefix != prefix)
        || layout
            .placed
            .iter()
            .any(|placed| placed.prefix.starts_with(prefix) && placed.prefix != prefix)
    {
        return Err(StoreError::Unsupported {
            what: "placing a prefix inside, or around, another placed prefix".to_string(),
        });
    }
    if current.as_ref().map(|(_, held)| held) == Some(options)
        || (current.is_none() && options.is_default())
    {
        return Ok(layout.clone());
    }
    // Only the sweeps change: the entries stay where they are, under a new record.
    if let Some((keyspace, held)) = &current
        && held.same_layout(options)
        && !options.is_default()
    {
        let record = Record {
            keyspace: keyspace.name().to_string(),
            options: options.clone(),
        };
        placements.insert(prefix.to_vec(), encode(&record)?)?;
        db.persist(fjall::PersistMode::SyncAll)?;
        let since = db.snapshot().seqno();
        return Ok(layout.moved(prefix, Some((keyspace.clone(), options.clone())), since));
    }
    let target = if options.is_default() {
        None
    } else {
        let name = fresh_name(db, prefix);
        Some((db.keyspace(&name, || options_of(options))?, name))
    };
    let from = current.as_ref().map_or(data, |(keyspace, _)| keyspace);
    let to = target.as_ref().map_or(data, |(keyspace, _)| keyspace);
    let mut batch = db.batch().durability(Some(fjall::PersistMode::SyncAll));
    for entry in db.snapshot().prefix(from, prefix) {
        let (key, value) = entry.into_inner()?;
        batch.insert(to, key.clone(), value);
        batch.remove(from, key);
    }
    match &target {
        Some((_, name)) => {
            let record = Record {
                keyspace: name.clone(),
                options: options.clone(),
            };
            batch.insert(placements, prefix.to_vec(), encode(&record)?);
        }
        None => batch.remove(placements, prefix.to_vec()),
    }
    batch.commit()?;
    let since = db.snapshot().seqno();
    let held = target.map(|(keyspace, _)| (keyspace, options.clone()));
    Ok(layout.moved(prefix, held, since))
}

/// fjall's options for a placed keyspace: `base` (the data keyspace's) with `options` on top.
pub(super) fn keyspace_options(
    base: KeyspaceCreateOptions,
    options: &StorageOptions,
    default_memtable_bytes: u64,
    hash_ratio: f32,
) -> KeyspaceCreateOptions {
    let mut created = base;
    if let Some(compression) = options.compression {
        created =
            created.data_block_compression_policy(CompressionPolicy::all(match compression {
                Compression::None => CompressionType::None,
                Compression::Lz4 => CompressionType::Lz4,
            }));
    }
    if let Some(bytes) = options.block_size {
        created = created.data_block_size_policy(BlockSizePolicy::all(bytes));
    }
    if let Some(bloom) = options.bloom_filter {
        created = created.filter_policy(FilterPolicy::all(if bloom {
            FilterPolicyEntry::Bloom(fjall::config::BloomConstructionPolicy::BitsPerKey(10.0))
        } else {
            FilterPolicyEntry::None
        }));
    }
    if let Some(encoding) = options.block_encoding {
        let (restart, hash) = match encoding {
            BlockEncoding::Plain => (1, 0.0),
            BlockEncoding::Prefix => (16, 0.0),
            BlockEncoding::PrefixHashIndex => (16, hash_ratio),
        };
        created = created
            .data_block_restart_interval_policy(RestartIntervalPolicy::all(restart))
            .data_block_hash_ratio_policy(HashRatioPolicy::all(hash));
    }
    if let Some(bytes) = options.table_size {
        created = created.compaction_strategy(Arc::new(
            fjall::compaction::Leveled::default().with_table_target_size(bytes),
        ));
    }
    // fjall asks its worker to seal a memtable past this; the store seals its own first (see
    // `SEAL_MEMTABLE_BYTES`), so fjall's limit sits a third above the store's.
    let memtable = options.memtable_size.unwrap_or(default_memtable_bytes);
    created.max_memtable_size(memtable.saturating_add(memtable / 3))
}
