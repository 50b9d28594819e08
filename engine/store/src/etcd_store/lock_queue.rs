//! A row's lock queue as etcd holds it (see the `locks` module): the lock keys under the
//! row's prefix, oldest first, and who of them holds the row when they are granted as a
//! process's own queue grants; and the search for a cycle in the waits every waiter published.

use std::collections::{HashMap, HashSet};

use super::wire::KeyValue;
use crate::locks::LockMode;

/// A transaction of one process: the process's tag and the owner's id in it.
pub(super) type Member = [u8; 16];

/// One lock in a row's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueuedLock {
    created: i64,
    member: Member,
    mode: LockMode,
}

/// What a replay of a row's queue says of one transaction.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Standing {
    Holds,
    /// Waits for these (holders it conflicts with, and the waiters ahead of it).
    WaitsFor(Vec<Member>),
}

pub(super) fn mode_byte(mode: LockMode) -> u8 {
    match mode {
        LockMode::Shared => b'S',
        LockMode::Exclusive => b'X',
    }
}

/// The locks of a row's queue as etcd holds them, oldest first.
pub(super) fn queue_of(keys: &[KeyValue]) -> Vec<QueuedLock> {
    let mut queue: Vec<QueuedLock> = keys
        .iter()
        .filter_map(|lock| {
            let key = &lock.key.0;
            let (mode, rest) = key.split_last()?;
            let mode = match mode {
                b'S' => LockMode::Shared,
                b'X' => LockMode::Exclusive,
                _ => return None,
            };
            let member = Member::try_from(rest.get(rest.len().checked_sub(16)?..)?).ok()?;
            Some(QueuedLock {
                created: lock.create_revision,
                member,
                mode,
            })
        })
        .collect();
    queue.sort_by_key(|lock| lock.created);
    queue
}

/// Replays a row's queue, oldest lock first, as this process's own queue grants: a request
/// is granted when it goes with every holder and nobody waits ahead of it, and a holder's
/// stronger request goes before the waiters (they wait for it anyway). What `member` comes
/// to; a member with no lock in the queue (lost with a lease) holds nothing to wait for.
pub(super) fn replay(queue: &[QueuedLock], member: Member) -> Standing {
    let mut holders: Vec<(Member, LockMode)> = Vec::new();
    let mut waiting: Vec<QueuedLock> = Vec::new();
    let mut standing = Standing::Holds;
    for lock in queue {
        let holds = holders.iter().any(|(holder, _)| *holder == lock.member);
        let conflicts: Vec<Member> = holders
            .iter()
            .filter(|(holder, held)| *holder != lock.member && !held.compatible(lock.mode))
            .map(|(holder, _)| *holder)
            .collect();
        let granted = conflicts.is_empty() && (holds || waiting.is_empty());
        if granted {
            match holders
                .iter_mut()
                .find(|(holder, _)| *holder == lock.member)
            {
                Some(held) => held.1 = held.1.max(lock.mode),
                None => holders.push((lock.member, lock.mode)),
            }
        } else {
            if lock.member == member {
                let mut blockers = conflicts;
                if !holds {
                    blockers.extend(waiting.iter().map(|ahead| ahead.member));
                }
                blockers.sort_unstable();
                blockers.dedup();
                blockers.retain(|blocker| *blocker != member);
                standing = Standing::WaitsFor(blockers);
            }
            waiting.push(*lock);
        }
    }
    standing
}

/// Whether the waits lead from `start` back to it.
pub(super) fn reaches(waits: &HashMap<Member, Vec<Member>>, start: Member) -> bool {
    let mut seen = HashSet::from([start]);
    let mut frontier = vec![start];
    while let Some(next) = frontier.pop() {
        for &target in waits.get(&next).map(Vec::as_slice).unwrap_or(&[]) {
            if target == start {
                return true;
            }
            if seen.insert(target) {
                frontier.push(target);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(created: i64, who: u8, mode: LockMode) -> QueuedLock {
        QueuedLock {
            created,
            member: [who; 16],
            mode,
        }
    }

    #[test]
    fn a_replayed_queue_grants_as_the_process_queue_does() {
        use LockMode::{Exclusive as X, Shared as S};
        // Shared locks go together; an exclusive one waits for them and the ones behind it.
        let queue = [lock(1, 1, S), lock(2, 2, S), lock(3, 3, X), lock(4, 4, S)];
        assert_eq!(replay(&queue, [1; 16]), Standing::Holds);
        assert_eq!(replay(&queue, [2; 16]), Standing::Holds);
        assert_eq!(
            replay(&queue, [3; 16]),
            Standing::WaitsFor(vec![[1; 16], [2; 16]])
        );
        assert_eq!(
            replay(&queue, [4; 16]),
            Standing::WaitsFor(vec![[3; 16]]),
            "a shared lock queues behind a waiting exclusive one"
        );
        // A holder's upgrade goes before the waiter queued earlier, and waits for the other
        // holder only.
        let queue = [lock(1, 1, S), lock(2, 2, S), lock(3, 3, X), lock(5, 1, X)];
        assert_eq!(replay(&queue, [1; 16]), Standing::WaitsFor(vec![[2; 16]]));
        let queue = [lock(1, 1, S), lock(3, 3, X), lock(5, 1, X)];
        assert_eq!(replay(&queue, [1; 16]), Standing::Holds);
        assert_eq!(replay(&queue, [3; 16]), Standing::WaitsFor(vec![[1; 16]]));
        // Someone with nothing queued waits for nobody.
        assert_eq!(replay(&queue, [9; 16]), Standing::Holds);
    }

    #[test]
    fn a_cycle_is_found_only_through_the_start() {
        let waits = HashMap::from([
            ([1; 16], vec![[2; 16]]),
            ([2; 16], vec![[3; 16]]),
            ([3; 16], vec![[2; 16]]),
        ]);
        assert!(
            !reaches(&waits, [1; 16]),
            "1 waits on a cycle it is not part of"
        );
        assert!(reaches(&waits, [2; 16]));
    }
}
