//! How long a connection's writes may wait for its client. A client that
//! stops reading fills its socket, and each write to it waits for room.
//! Kafka closes such a connection once it has seen no activity for
//! `connections.max.idle.ms`; here a write that has waited that long for
//! room closes it, and once the broker begins shutting down a write waits
//! at most [`SHUTDOWN_WRITE_WAIT`], so a client that does not read can hold
//! neither memory nor shutdown.

use std::cell::Cell;
use std::io::{IoSlice, Result};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::{self, BoxFuture, Either};
use futures::AsyncWrite;

/// The longest a write waits for room once shutdown has begun.
pub const SHUTDOWN_WRITE_WAIT: Duration = Duration::from_secs(1);

/// A writer that notes since when its current write has been waiting for
/// room (none while writes complete).
pub struct Watched<W> {
    inner: W,
    waiting_since: Rc<Cell<Option<Instant>>>,
}

impl<W> Watched<W> {
    /// Watches `inner`'s writes.
    pub fn new(inner: W) -> Self {
        Watched {
            inner,
            waiting_since: Rc::new(Cell::new(None)),
        }
    }

    /// Since when the current write has been waiting, shared with
    /// [`stalled`].
    pub fn waiting_since(&self) -> Rc<Cell<Option<Instant>>> {
        self.waiting_since.clone()
    }

    fn note<T>(&self, polled: Poll<T>) -> Poll<T> {
        match polled {
            Poll::Pending => {
                if self.waiting_since.get().is_none() {
                    self.waiting_since.set(Some(Instant::now()));
                }
            }
            Poll::Ready(_) => self.waiting_since.set(None),
        }
        polled
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Watched<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.note(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.note(polled)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.note(polled)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_close(cx);
        this.note(polled)
    }
}

/// Resolves once a write (as `waiting_since` tells) has waited `limit` for
/// room, or [`SHUTDOWN_WRITE_WAIT`] once `shutdown` has resolved.
pub async fn stalled(
    waiting_since: &Cell<Option<Instant>>,
    mut limit: Duration,
    shutdown: BoxFuture<'static, ()>,
) {
    // A zero limit would make every sleep below ready at once: the loop
    // would never yield to the executor.
    limit = limit.max(Duration::from_millis(1));
    let mut shutdown = Some(shutdown);
    loop {
        // With no write waiting, a write that starts to wait during the
        // sleep is looked at again when its own limit runs out.
        let wait = match waiting_since.get() {
            Some(since) => {
                let left = limit.saturating_sub(since.elapsed());
                if left.is_zero() {
                    return;
                }
                left
            }
            None => limit,
        };
        let sleep = glommio::timer::sleep(wait);
        match shutdown.take() {
            Some(signal) => match future::select(Box::pin(sleep), signal).await {
                Either::Left((_, signal)) => shutdown = Some(signal),
                Either::Right(_) => limit = limit.min(SHUTDOWN_WRITE_WAIT),
            },
            None => {
                sleep.await;
            }
        }
    }
}

/// Runs `writes` (which write through a [`Watched`] whose `waiting_since`
/// is given) until they end, or until one has waited too long for room as
/// [`stalled`] judges: then false.
pub async fn bounded<T>(
    writes: impl std::future::Future<Output = T>,
    waiting_since: &Cell<Option<Instant>>,
    limit: Duration,
    shutdown: BoxFuture<'static, ()>,
) -> Option<T> {
    let stall = stalled(waiting_since, limit, shutdown);
    match future::select(Box::pin(writes), Box::pin(stall)).await {
        Either::Left((done, _)) => Some(done),
        Either::Right(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes `room` bytes, then waits for room forever.
    struct Filling {
        room: usize,
    }

    impl AsyncWrite for Filling {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<Result<usize>> {
            let this = self.get_mut();
            if this.room == 0 {
                return Poll::Pending;
            }
            let took = buf.len().min(this.room);
            this.room -= took;
            Poll::Ready(Ok(took))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn never() -> BoxFuture<'static, ()> {
        Box::pin(future::pending())
    }

    #[test]
    fn writes_that_complete_are_not_stalled_and_a_write_waiting_past_the_limit_is() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                use futures::AsyncWriteExt;
                let mut writer = Watched::new(Filling { room: 10 });
                let since = writer.waiting_since();
                let limit = Duration::from_millis(200);
                // Writes that find room finish, however long they are given.
                let done = bounded(writer.write_all(&[1; 10]), &since, limit, never()).await;
                assert!(matches!(done, Some(Ok(()))));
                assert_eq!(since.get(), None);
                // A write that never finds room is given up after the limit.
                let started = Instant::now();
                let done = bounded(writer.write_all(&[1; 1]), &since, limit, never()).await;
                assert!(done.is_none());
                let took = started.elapsed();
                assert!(took >= limit && took < limit * 5, "gave up after {took:?}");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn at_shutdown_a_waiting_write_is_given_up_after_the_shutdown_wait() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                use futures::AsyncWriteExt;
                let mut writer = Watched::new(Filling { room: 0 });
                let since = writer.waiting_since();
                let (tx, rx) = futures::channel::oneshot::channel::<()>();
                let shutdown: BoxFuture<'static, ()> = Box::pin(async move {
                    let _ = rx.await;
                });
                let started = Instant::now();
                glommio::spawn_local(async move {
                    glommio::timer::sleep(Duration::from_millis(100)).await;
                    let _ = tx.send(());
                })
                .detach();
                let done = bounded(
                    writer.write_all(&[1; 1]),
                    &since,
                    Duration::from_secs(600),
                    shutdown,
                )
                .await;
                assert!(done.is_none());
                let took = started.elapsed();
                assert!(
                    took >= SHUTDOWN_WRITE_WAIT && took < SHUTDOWN_WRITE_WAIT * 3,
                    "gave up after {took:?}"
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_sender_waiting_on_a_full_channel_fails_when_the_receiver_is_dropped() {
        // A connection's reader waits so when its writer has given up.
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let (tx, rx) = glommio::channels::local_channel::new_bounded::<u32>(1);
                tx.send(1).await.unwrap();
                glommio::spawn_local(async move {
                    glommio::timer::sleep(Duration::from_millis(50)).await;
                    drop(rx);
                })
                .detach();
                let sent = crate::server::connection::within(Duration::from_secs(5), tx.send(2));
                assert!(matches!(sent.await, Some(Err(_))));
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_zero_limit_still_yields_to_other_tasks() {
        // A limit of zero must not spin: a task beside it gets to run. The
        // executor runs on a thread of its own, so a spinning one fails the
        // test instead of hanging it.
        let (done, finished) = std::sync::mpsc::channel();
        let _executor = glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let since = Cell::new(None);
                let watch = bounded(future::pending::<()>(), &since, Duration::ZERO, never());
                let other = glommio::spawn_local(async {
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                });
                futures::future::select(Box::pin(watch), other).await;
                let _ = done.send(());
            })
            .unwrap();
        assert!(
            finished.recv_timeout(Duration::from_secs(5)).is_ok(),
            "the executor was never given back"
        );
    }
}
