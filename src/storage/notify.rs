//! Two small single-threaded wake-up primitives used by a log: a `Signal`
//! that wakes its one writer task, and `FifoTurns`, which lets appends that
//! had to wait for back-pressure go in the order they were called.
//!
//! Shard-local: built on `Cell`/`RefCell` and wakers, never shared across
//! threads.

use std::{
    cell::{Cell, RefCell},
    collections::BTreeSet,
    future::Future,
    pin::Pin,
    task::{Context, Poll, Waker},
};

/// A level-triggered wake-up for a single waiting task: `notify` before
/// `wait` is not lost.
#[derive(Debug, Default)]
pub struct Signal {
    notified: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Signal {
    /// Marks the signal and wakes the waiting task, if any.
    pub fn notify(&self) {
        self.notified.set(true);
        let waker = self.waker.borrow_mut().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Resolves once the signal has been notified since the last `wait`.
    pub fn wait(&self) -> SignalWait<'_> {
        SignalWait { signal: self }
    }
}

/// Future returned by [`Signal::wait`].
pub struct SignalWait<'a> {
    signal: &'a Signal,
}

impl Future for SignalWait<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.signal.notified.replace(false) {
            return Poll::Ready(());
        }
        *self.signal.waker.borrow_mut() = Some(context.waker().clone());
        Poll::Pending
    }
}

/// Ticket-ordered turns: callers that could not proceed at once take a
/// ticket and are let through one at a time in ticket order. A ticket whose
/// holder gave up (its future was dropped) is skipped.
#[derive(Debug, Default)]
pub struct FifoTurns {
    next_ticket: u64,
    serving_ticket: u64,
    abandoned: BTreeSet<u64>,
    wakers: Vec<Waker>,
}

impl FifoTurns {
    /// True when nobody holds an unserved ticket.
    pub fn is_idle(&self) -> bool {
        self.serving_ticket == self.next_ticket
    }

    /// A new ticket, served after every earlier one.
    pub fn take_ticket(&mut self) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        ticket
    }

    /// True when `ticket` is the one being served.
    pub fn is_turn(&self, ticket: u64) -> bool {
        self.serving_ticket == ticket
    }

    /// Remembers a waker to call when the turn or the condition changes.
    pub fn register(&mut self, waker: &Waker) {
        if !self.wakers.iter().any(|known| known.will_wake(waker)) {
            self.wakers.push(waker.clone());
        }
    }

    /// The holder of the served ticket is done; serve the next live ticket.
    ///
    /// # Panics
    /// If `ticket` is not the one being served.
    pub fn finish(&mut self, ticket: u64) {
        assert_eq!(ticket, self.serving_ticket);
        self.serving_ticket += 1;
        while self.abandoned.remove(&self.serving_ticket) {
            self.serving_ticket += 1;
        }
        self.wake_all();
    }

    /// The holder of `ticket` stopped waiting before its turn ended.
    pub fn abandon(&mut self, ticket: u64) {
        if ticket == self.serving_ticket {
            self.finish(ticket);
        } else if ticket > self.serving_ticket {
            self.abandoned.insert(ticket);
        }
    }

    /// Wakes every waiter so each re-checks its turn and condition.
    pub fn wake_all(&mut self) {
        for waker in self.wakers.drain(..) {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tickets are served in order, and an abandoned ticket does not block
    /// the ones behind it.
    #[test]
    fn abandoned_tickets_are_skipped() {
        let mut turns = FifoTurns::default();
        assert!(turns.is_idle());
        let first = turns.take_ticket();
        let second = turns.take_ticket();
        let third = turns.take_ticket();
        assert!(turns.is_turn(first));
        turns.abandon(second);
        turns.finish(first);
        assert!(turns.is_turn(third));
        turns.finish(third);
        assert!(turns.is_idle());
    }
}
