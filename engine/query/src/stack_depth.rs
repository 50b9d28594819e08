//! Room on the stack for planning and running a statement, whatever thread polls it.
//!
//! Planning recurses through the statement's tree (subqueries, joins, nested calls), and an
//! unoptimised build's frames on that path are large: a level of subquery in FROM takes about
//! 50 KiB, so thirty levels need more than a runtime worker's default 2 MiB stack. A server's
//! connections run on whatever runtime the embedder gives them, and an overflow takes the
//! whole process down. So a statement's future is polled through [`OnAmpleStack`], which moves
//! the poll to a fresh stack segment whenever less than its red zone remains (a check of the
//! stack pointer otherwise): [`DATAFUSION_STACK_BYTES`], enough for the deepest statement the
//! parser accepts. [`protect_recursion`] widens the margin at which
//! DataFusion's own recursive functions (expressions, optimizer passes: unbounded depth) grow
//! their stacks, so that the frames between two of their checks fit.

use std::future::Future;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

/// The stack a statement planned and run by DataFusion is given: enough for the deepest
/// nesting the parser accepts (`sql::parse::MAX_QUERY_DEPTH`). An unoptimised build's frames
/// are several times an optimised one's.
pub const DATAFUSION_STACK_BYTES: usize = if cfg!(debug_assertions) {
    8 << 20
} else {
    4 << 20
};

/// The stack to give the threads of a runtime that runs statements ([`OnAmpleStack`]'s red
/// zones fit in it, so a statement never moves to a fresh segment): `rowdex serve`'s and the
/// REPL's runtimes, and an embedder's that wants the same.
pub const WORKER_STACK_BYTES: usize = 32 << 20;

/// The size of each fresh segment. Reserved, not committed: only the pages used are.
pub const SEGMENT_BYTES: usize = 16 << 20;

/// The margin DataFusion's recursive planner and optimizer functions keep before growing: the
/// frames between two of their checks (an expression's planning and rowdex's planner hooks
/// inside it) take a few hundred KiB unoptimised, more than their default 128 KiB.
pub const RECURSION_RED_ZONE_BYTES: usize = 512 << 10;

/// Sets, once per process, the margin and segment size of DataFusion's recursion guards.
pub fn protect_recursion() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        recursive::set_minimum_stack_size(RECURSION_RED_ZONE_BYTES);
        recursive::set_stack_allocation_size(SEGMENT_BYTES);
    });
}

/// A future each of whose polls has at least `red_zone` bytes of stack below it. It holds its
/// future boxed as a trait object: besides keeping it off the caller's stack, that ends the
/// chain of nested future types a caller's `Send` check has to walk.
pub struct OnAmpleStack<'a, T> {
    inner: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
    red_zone: usize,
}

impl<'a, T> OnAmpleStack<'a, T> {
    pub fn new(red_zone: usize, inner: impl Future<Output = T> + Send + 'a) -> Self {
        OnAmpleStack {
            inner: Box::pin(inner),
            red_zone,
        }
    }
}

impl<T> Future for OnAmpleStack<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        // The future's state lives in its box; only this poll's frames use a segment, and
        // they are gone when it returns.
        let red_zone = self.red_zone.min(SEGMENT_BYTES / 2);
        let inner = self.inner.as_mut();
        stacker::maybe_grow(red_zone, SEGMENT_BYTES, move || inner.poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recurses `depth` times with a 64 KiB frame each (no checks of its own), returning how
    /// many frames ran.
    fn deep(depth: usize) -> usize {
        let frame = std::hint::black_box([0u8; 64 << 10]);
        if depth == 0 {
            return usize::from(frame[0] == 0);
        }
        deep(depth - 1) + std::hint::black_box(frame)[1] as usize + 1
    }

    #[test]
    fn a_future_polled_on_a_small_thread_gets_room() {
        // 256 KiB of stack, far less than the red zone: the poll must move to a segment.
        let handle = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("runtime");
                runtime.block_on(OnAmpleStack::new(1 << 20, async {
                    let before = stacker::remaining_stack().unwrap_or(0);
                    // 8 frames of 64 KiB need twice what the thread has.
                    let frames = deep(7);
                    (before, frames)
                }))
            })
            .expect("spawn");
        let (room, frames) = handle.join().expect("no overflow");
        assert!(room >= 1 << 20, "polled with {room} bytes left");
        assert_eq!(frames, 8);
    }
}
