//! `GET /v1/backup`: a consistent online copy of the storage as a tar
//! stream (the files, then their manifest: [`podium_core::backup`]),
//! which `podium backup DIR` unpacks and checks. The files are read and
//! hashed on a blocking thread while the response is sent; a client that
//! goes away stops it.

use std::io::{self, Write};

use axum::body::Body;
use axum::extract::State;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::mpsc;

use super::error::HttpResult;
use super::St;

/// Bytes a chunk of the stream holds.
const CHUNK: usize = 256 * 1024;
/// Chunks queued before the reader waits for the client.
const QUEUED: usize = 4;

pub(crate) async fn backup(State(st): State<St>) -> HttpResult<Response> {
    let set = st.be.backup().await?;
    let name = format!("podium-backup-{}.tar", set.last_lsn);
    let (tx, mut rx) = mpsc::channel::<io::Result<Bytes>>(QUEUED);
    tokio::task::spawn_blocking(move || {
        let mut out = Chunks {
            tx,
            buf: Vec::with_capacity(CHUNK),
        };
        let written =
            podium_core::backup::write_tar(set, env!("CARGO_PKG_VERSION"), crate::COMMIT, &mut out);
        match written {
            Ok(m) => tracing::info!(
                last_lsn = m.last_lsn,
                files = m.files.len(),
                bytes = m.files.iter().map(|f| f.bytes).sum::<u64>(),
                "backup sent"
            ),
            Err(e) => {
                tracing::warn!("backup not sent whole: {e}");
                // Ends the body with an error: the client sees a cut
                // stream, never one that looks whole.
                let _ = out.tx.blocking_send(Err(e));
            }
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok((
        [
            (CONTENT_TYPE, "application/x-tar".to_string()),
            (
                CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The tar writer's output: chunks handed to the response body.
struct Chunks {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl Chunks {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for Chunks {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}
