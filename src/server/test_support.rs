//! Helpers for the server's unit tests.

use futures::AsyncRead;

/// A socket that hands out at most `chunk` bytes of `data` per read: a
/// frame arriving in pieces.
pub struct Chunked<'a> {
    pub data: &'a [u8],
    pub chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        std::task::Poll::Ready(Ok(n))
    }
}
