//! The HTTP connections' bytes, for the answers hyper writes on its own.
//!
//! A request hyper cannot parse — a URI over 65,534 bytes (414), a head
//! over its buffer (431), a broken request line or header (400) — never
//! reaches the router: hyper writes a bare status line with an empty body
//! and closes the connection. [`Wire`] sits between hyper and the socket
//! and replaces exactly that answer (an error status hyper chose, with
//! `content-length: 0` and no `content-type`, which no route ever sends:
//! the router's errors are all JSON) with podium's JSON error. Every other
//! write passes through untouched after a prefix comparison.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use podium_core::error::{ApiError, Code};

/// A connection whose hyper-made error answers are rewritten as JSON.
pub struct Wire<I> {
    io: I,
    /// A rewritten answer still to be written, from `sent`.
    pending: Vec<u8>,
    sent: usize,
}

impl<I> Wire<I> {
    pub fn new(io: I) -> Self {
        Wire {
            io,
            pending: Vec::new(),
            sent: 0,
        }
    }
}

impl<I: AsyncWrite + Unpin> Wire<I> {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending = Vec::new();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` as written when it is hyper's own error answer, queueing
    /// its JSON replacement.
    fn replaced(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Option<Poll<io::Result<usize>>> {
        let answer = json_answer(buf)?;
        self.pending = answer;
        self.sent = 0;
        // Written or not yet, the bytes are ours to finish: hyper flushes
        // (and shuts down) next, and both wait for them.
        Some(match self.poll_pending(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        })
    }
}

/// The JSON answer standing for `head` when it is an answer hyper wrote
/// for a request it could not parse.
fn json_answer(head: &[u8]) -> Option<Vec<u8>> {
    let rest = head
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| head.strip_prefix(b"HTTP/1.0 "))?;
    let (code, message) = match rest.get(..4)? {
        b"400 " => (Code::MalformedRequest, "the request is not valid HTTP/1.1"),
        b"414 " => (
            Code::UriTooLong,
            "the request URI is longer than 65534 bytes",
        ),
        b"431 " => (
            Code::HeadersTooLarge,
            "the request line and headers are too large",
        ),
        _ => return None,
    };
    let end = memchr::memmem::find(head, b"\r\n\r\n")?;
    let head = &head[..end + 2];
    let lower = head.to_ascii_lowercase();
    if memchr::memmem::find(&lower, b"\r\ncontent-type:").is_some()
        || memchr::memmem::find(&lower, b"\r\ncontent-length: 0\r\n").is_none()
    {
        return None;
    }
    let body = super::error::error_json(&ApiError::new(code, message)).to_string();
    let mut out = Vec::with_capacity(head.len() + body.len() + 96);
    for line in head.split_inclusive(|&b| b == b'\n') {
        if !line.to_ascii_lowercase().starts_with(b"content-length:") {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(b"content-type: application/json\r\n");
    out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    out.extend_from_slice(b"connection: close\r\n\r\n");
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

impl<I: AsyncRead + Unpin> AsyncRead for Wire<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Wire<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        if let Some(done) = this.replaced(cx, buf) {
            return done;
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        // hyper's error answer is a head alone, in one buffer.
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if bufs.iter().filter(|b| !b.is_empty()).count() == 1 {
                if let Some(done) = this.replaced(cx, first) {
                    return done;
                }
            }
        }
        Pin::new(&mut this.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bare_error_heads_are_replaced() {
        let hyper = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(json_answer(hyper).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{out}");
        assert!(out.contains("\r\ndate: x\r\n"), "{out}");
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "uri_too_long");
        for ours in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 10\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"{\"HTTP/1.1 414 \"}",
        ] {
            assert!(json_answer(ours).is_none(), "{:?}", String::from_utf8_lossy(ours));
        }
    }
}
