//! COPY data exchanged with whoever runs the statement: a `COPY ... FROM STDIN` that has
//! started and waits for its data ([`CopyIn`]), and what a `COPY ... TO STDOUT` produced
//! ([`CopyOut`]). A wire protocol server feeds a [`CopyIn`] the client's CopyData messages as
//! they come; the load reads them through [`ChunkReader`] on its reading thread.

use std::io::Read;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::copy_data::format::CopyFormat;
use crate::error::{Error, Result};

/// Pieces of data in flight between the sender and the load: enough to keep the load busy
/// while the next ones arrive, few enough that a fast client waits for a slow load.
pub const CHUNKS_IN_FLIGHT: usize = 16;

/// What the sender of COPY data hands the load.
#[derive(Debug)]
pub enum Chunk {
    Data(Vec<u8>),
    /// The data is complete.
    End,
}

/// A `COPY ... FROM STDIN` waiting for its data. Send it the data with [`CopyIn::send`] in
/// pieces split anywhere, then call [`CopyIn::finish`]; [`CopyIn::abort`] (or dropping it)
/// gives the load up, writing nothing more.
pub struct CopyIn {
    /// None once the sender gave up.
    chunks: Option<mpsc::Sender<Chunk>>,
    load: Option<JoinHandle<Result<u64>>>,
    columns: usize,
    format: CopyFormat,
}

impl std::fmt::Debug for CopyIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyIn")
            .field("columns", &self.columns)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl CopyIn {
    /// A COPY whose load (started already) reads what `chunks` carries and returns the rows it
    /// loaded.
    pub(crate) fn new(
        chunks: mpsc::Sender<Chunk>,
        load: JoinHandle<Result<u64>>,
        columns: usize,
        format: CopyFormat,
    ) -> CopyIn {
        CopyIn {
            chunks: Some(chunks),
            load: Some(load),
            columns,
            format,
        }
    }

    /// How many columns each record holds.
    pub fn columns(&self) -> usize {
        self.columns
    }

    pub fn format(&self) -> &CopyFormat {
        &self.format
    }

    /// Hands the load the next piece of the data. Fails when the load has stopped (a row it
    /// could not convert or write), with the error that stopped it.
    pub async fn send(&mut self, data: Vec<u8>) -> Result<()> {
        if let Some(chunks) = &self.chunks
            && chunks.send(Chunk::Data(data)).await.is_ok()
        {
            return Ok(());
        }
        match self.outcome().await {
            Err(error) => Err(error),
            Ok(_) => Err(Error::WorkerStopped {
                work: "loading COPY data",
            }),
        }
    }

    /// The data is complete: waits for the load to write what is left and returns the number
    /// of rows loaded.
    pub async fn finish(mut self) -> Result<u64> {
        if let Some(chunks) = self.chunks.take() {
            // A load that stopped early reports why below.
            let _ = chunks.send(Chunk::End).await;
        }
        self.outcome().await
    }

    /// The sender gives up (a client's CopyFail, say): the rows not written yet are not
    /// written. Waits until the load has stopped, and returns its error, which says how many
    /// rows were loaded before.
    pub async fn abort(mut self) -> Error {
        self.chunks = None;
        match self.outcome().await {
            Err(error) => error,
            Ok(loaded) => Error::CopyAbandoned { loaded },
        }
    }

    async fn outcome(&mut self) -> Result<u64> {
        match self.load.take() {
            Some(load) => load.await.unwrap_or(Err(Error::WorkerStopped {
                work: "loading COPY data",
            })),
            None => Err(Error::WorkerStopped {
                work: "loading COPY data",
            }),
        }
    }
}

/// The bytes a `COPY ... TO STDOUT` wrote: the header line (if asked for) and each row, a
/// piece each.
#[derive(Debug)]
pub struct CopyOut {
    pub format: CopyFormat,
    pub columns: usize,
    pub rows: u64,
    pub chunks: Vec<Vec<u8>>,
}

/// The receiving end of a [`CopyIn`], read by the load's reading thread: blocks for each next
/// piece; the end of the data reads as the end of the stream, a sender gone without ending it
/// as an error of kind `ConnectionAborted`.
pub struct ChunkReader {
    chunks: mpsc::Receiver<Chunk>,
    current: Vec<u8>,
    at: usize,
    ended: bool,
}

impl ChunkReader {
    pub fn new(chunks: mpsc::Receiver<Chunk>) -> ChunkReader {
        ChunkReader {
            chunks,
            current: Vec::new(),
            at: 0,
            ended: false,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            if self.ended {
                return Ok(0);
            }
            match self.chunks.blocking_recv() {
                Some(Chunk::Data(data)) => {
                    self.current = data;
                    self.at = 0;
                }
                Some(Chunk::End) => self.ended = true,
                None => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "the COPY data stopped before its end",
                    ));
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_as_one_stream_and_a_gone_sender_is_an_abort() {
        let (sender, receiver) = mpsc::channel(4);
        let mut reader = ChunkReader::new(receiver);
        let feeder = std::thread::spawn(move || {
            for piece in [&b"ab"[..], b"", b"cde"] {
                sender
                    .blocking_send(Chunk::Data(piece.to_vec()))
                    .expect("send");
            }
            sender.blocking_send(Chunk::End).expect("end");
        });
        let mut text = String::new();
        reader.read_to_string(&mut text).expect("read");
        assert_eq!(text, "abcde");
        feeder.join().expect("feeder");

        let (sender, receiver) = mpsc::channel(4);
        let mut reader = ChunkReader::new(receiver);
        sender
            .blocking_send(Chunk::Data(b"x".to_vec()))
            .expect("send");
        drop(sender);
        let mut bytes = Vec::new();
        let error = reader.read_to_end(&mut bytes).expect_err("aborted");
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionAborted);
    }
}
