//! One behavioural suite, run unchanged against every backend.
//!
//! Each case is an async function taking the store under test; `backend_suite!` instantiates
//! every case as a `#[tokio::test]` per backend, so every backend is held to the same contract:
//! memory, fjall, and etcd (a real three-member cluster on loopback, started once per run of
//! this binary; each case gets its own namespace on it). The multi-threaded runtime is used so
//! the concurrency cases really run in parallel.
//!
//! Where the backends differ, it is stated in their capabilities and checked by
//! `capabilities_are_reported`: etcd serves reverse scans by sorting on the server
//! (`native_reverse_scan: false`) and is durable, memory is not durable.

mod basic;
mod common;
mod etcd_only;
mod fjall_only;
mod placement;
mod scan;
mod snapshot;
mod txn;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rowdex_store::etcd_store::local_cluster::LocalEtcdCluster;
use rowdex_store::{Durability, EtcdOptions, EtcdStore, FjallStore, KvStore, MemoryStore};
use tempfile::TempDir;

/// A store plus whatever must outlive it.
struct Fixture {
    // Declared first so it is dropped (and the database closed) before the directory goes.
    store: Arc<dyn KvStore>,
    _dir: Option<TempDir>,
}

async fn open_memory() -> Fixture {
    Fixture {
        store: Arc::new(MemoryStore::new()),
        _dir: None,
    }
}

async fn open_fjall() -> Fixture {
    let dir = tempfile::tempdir().expect("create temp dir");
    let store = FjallStore::open(dir.path(), Durability::SyncWal).expect("open fjall store");
    Fixture {
        store: Arc::new(store),
        _dir: Some(dir),
    }
}

/// The cluster every etcd case runs on (one per test binary).
fn cluster() -> &'static LocalEtcdCluster {
    LocalEtcdCluster::shared()
        .expect("a 3-member etcd cluster (scripts/install-etcd installs etcd)")
}

async fn open_etcd() -> Fixture {
    static DATABASES: AtomicUsize = AtomicUsize::new(0);
    let namespace = format!("conformance{}", DATABASES.fetch_add(1, Ordering::Relaxed));
    let store = EtcdStore::connect(&cluster().address(&namespace), EtcdOptions::default())
        .await
        .expect("connect to the etcd cluster");
    Fixture {
        store: Arc::new(store),
        _dir: None,
    }
}

macro_rules! cases {
    ($open:path; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> rowdex_store::Result<()> {
                let fixture = $open().await;
                crate::$module::$case(Arc::clone(&fixture.store)).await
            }
        )*
    };
}

macro_rules! backend_suite {
    ($backend:ident, $open:path) => {
        mod $backend {
            use std::sync::Arc;

            cases!($open;
                basic::get_put_delete,
                basic::empty_values_are_values,
                basic::multi_get_keeps_order,
                basic::batch_later_op_wins,
                basic::empty_batch_is_a_no_op,
                basic::invalid_batch_writes_nothing,
                basic::longest_keys_round_trip,
                basic::capabilities_are_reported,
                scan::forward_paging,
                scan::reverse_paging,
                scan::bounded_and_unbounded_ranges,
                scan::empty_and_inverted_ranges,
                scan::prefix_ranges_with_ff_bytes,
                scan::limit_zero_reports_remaining,
                scan::deleted_keys_are_not_scanned,
                scan::stream_reads_whole_range,
                scan::counts_match_scans,
                scan::visits_match_scans,
                scan::contains_answers_presence,
                scan::batched_ranges_match_single_pages,
                snapshot::snapshot_ignores_later_writes,
                snapshot::snapshot_pages_stay_consistent,
                snapshot::snapshots_are_independent,
                txn::reads_own_writes,
                txn::scans_merge_own_writes,
                txn::reads_from_its_snapshot,
                txn::write_write_conflict,
                txn::absent_key_read_conflicts_with_insert,
                txn::range_scan_conflicts_with_insert,
                txn::range_scan_conflicts_with_delete,
                txn::range_scan_ignores_writes_outside,
                txn::partial_scan_covers_only_what_was_returned,
                txn::conflicting_commit_writes_nothing,
                txn::blind_writes_do_not_conflict,
                txn::rollback_to_savepoint_undoes_later_writes,
                txn::read_only_commit_succeeds,
                txn::dropped_transaction_writes_nothing,
                txn::put_run_is_a_put_of_each,
                txn::invalid_write_fails_commit,
                txn::concurrent_increments_are_serialized,
                txn::guarded_validation_checks_only_guarded_reads,
                txn::refresh_moves_the_snapshot_under_own_writes,
                txn::reads_after_a_move_are_checked_against_the_moved_snapshot,
                txn::changed_since_snapshot_sees_later_commits,
            );
        }
    };
}

/// The capabilities each backend states: (durable, native reverse scans).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_differ_as_stated() {
    let stated = |fixture: &Fixture| {
        let caps = fixture.store.capabilities();
        (caps.durable, caps.native_reverse_scan)
    };
    assert_eq!(stated(&open_memory().await), (false, true), "memory");
    assert_eq!(stated(&open_fjall().await), (true, true), "fjall");
    assert_eq!(stated(&open_etcd().await), (true, false), "etcd");
}

backend_suite!(memory, crate::open_memory);
backend_suite!(fjall, crate::open_fjall);
backend_suite!(etcd, crate::open_etcd);
