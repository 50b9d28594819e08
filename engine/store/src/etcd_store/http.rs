//! A small HTTP/1.1 client for etcd's JSON gateway: one POST per call on a kept-alive
//! connection, the response framed by `Content-Length` or by chunked transfer encoding.
//!
//! It says how far a failed call got, because that decides whether a write may be repeated:
//! a request that never left this process cannot have been applied, one that left and got no
//! answer may have been.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Longest status, header or chunk-size line accepted.
const MAX_LINE: usize = 8 * 1024;

/// How far a failed call got.
#[derive(Debug)]
pub(super) enum HttpError {
    /// No connection could be made: nothing was sent.
    Connect(io::Error),
    /// The request could not be written whole: the server cannot have acted on it.
    Send(io::Error),
    /// The request was sent but no whole response came back: it may have been acted on.
    Receive(io::Error),
}

/// A response: its status code and its whole body.
#[derive(Debug)]
pub(super) struct Response {
    pub(super) status: u16,
    pub(super) body: Vec<u8>,
}

/// One connection to one endpoint.
#[derive(Debug)]
pub(super) struct Connection {
    stream: BufReader<TcpStream>,
    host: String,
    /// False once the server said it closes the connection, or a call on it failed.
    reusable: bool,
}

impl Connection {
    /// Connects to `host` (`ip:port` or `name:port`).
    pub(super) async fn open(host: &str) -> Result<Connection, HttpError> {
        let stream = TcpStream::connect(host).await.map_err(HttpError::Connect)?;
        stream.set_nodelay(true).map_err(HttpError::Connect)?;
        Ok(Connection {
            stream: BufReader::new(stream),
            host: host.to_string(),
            reusable: true,
        })
    }

    /// Whether the connection can take another request: the server has not closed it (a
    /// closed socket reads as end of file at once) and no call on it failed.
    pub(super) fn is_alive(&self) -> bool {
        if !self.reusable || !self.stream.buffer().is_empty() {
            return false;
        }
        let mut probe = [0u8; 1];
        matches!(
            self.stream.get_ref().try_read(&mut probe),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock
        )
    }

    /// Whether the connection may be pooled after its last call.
    pub(super) fn is_reusable(&self) -> bool {
        self.reusable
    }

    /// POSTs `body` (JSON) to `path` and reads the whole response.
    pub(super) async fn post(&mut self, path: &str, body: &[u8]) -> Result<Response, HttpError> {
        self.send(path, body).await?;
        let response = self.read_response().await.map_err(HttpError::Receive)?;
        Ok(response)
    }

    /// POSTs `body` (JSON) to `path` for a response that streams (a watch): reads the status
    /// and the headers, then [`Connection::next_chunk`] reads the body as it comes. The
    /// connection serves nothing else afterwards.
    pub(super) async fn post_streaming(
        &mut self,
        path: &str,
        body: &[u8],
    ) -> Result<u16, HttpError> {
        self.send(path, body).await?;
        let head = self.read_head().await.map_err(HttpError::Receive)?;
        if !head.chunked {
            return Err(HttpError::Receive(malformed(
                "a streamed answer must be chunked".to_string(),
            )));
        }
        Ok(head.status)
    }

    /// The next chunk of a streamed body; `None` at its end.
    pub(super) async fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut chunk = Vec::new();
        match self.read_chunk(&mut chunk).await? {
            true => Ok(Some(chunk)),
            false => Ok(None),
        }
    }

    async fn send(&mut self, path: &str, body: &[u8]) -> Result<(), HttpError> {
        self.reusable = false;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let stream = self.stream.get_mut();
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(HttpError::Send)?;
        stream.write_all(body).await.map_err(HttpError::Send)?;
        stream.flush().await.map_err(HttpError::Send)?;
        Ok(())
    }

    async fn read_head(&mut self) -> io::Result<Head> {
        let status_line = self.read_line().await?;
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| malformed(format!("bad status line {status_line:?}")))?;
        let mut head = Head {
            status,
            length: None,
            chunked: false,
            keep_alive: true,
        };
        loop {
            let line = self.read_line().await?;
            if line.is_empty() {
                return Ok(head);
            }
            let Some((name, value)) = line.split_once(':') else {
                return Err(malformed(format!("bad header line {line:?}")));
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => {
                    head.length = Some(
                        value
                            .parse::<usize>()
                            .map_err(|_| malformed(format!("bad Content-Length {value:?}")))?,
                    );
                }
                "transfer-encoding" => head.chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => head.keep_alive = !value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
    }

    async fn read_response(&mut self) -> io::Result<Response> {
        let head = self.read_head().await?;
        let mut keep_alive = head.keep_alive;
        let body = if head.chunked {
            self.read_chunked().await?
        } else if let Some(length) = head.length {
            let mut body = vec![0u8; length];
            self.stream.read_exact(&mut body).await?;
            body
        } else {
            // Framed by the end of the connection.
            keep_alive = false;
            let mut body = Vec::new();
            self.stream.read_to_end(&mut body).await?;
            body
        };
        self.reusable = keep_alive;
        Ok(Response {
            status: head.status,
            body,
        })
    }

    async fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        while self.read_chunk(&mut body).await? {}
        Ok(body)
    }

    /// Appends the next chunk to `body`; false at the last (empty) one, whose trailers it
    /// reads too.
    async fn read_chunk(&mut self, body: &mut Vec<u8>) -> io::Result<bool> {
        let line = self.read_line().await?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| malformed(format!("bad chunk size {line:?}")))?;
        if size == 0 {
            // Trailers (etcd sends one), up to the empty line.
            while !self.read_line().await?.is_empty() {}
            return Ok(false);
        }
        let start = body.len();
        body.resize(start + size, 0);
        self.stream.read_exact(&mut body[start..]).await?;
        if !self.read_line().await?.is_empty() {
            return Err(malformed("chunk not followed by CRLF".to_string()));
        }
        Ok(true)
    }

    /// One line without its CRLF.
    async fn read_line(&mut self) -> io::Result<String> {
        let mut line = Vec::new();
        let read = (&mut self.stream)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed by the server",
            ));
        }
        if line.last() != Some(&b'\n') {
            return Err(malformed("line too long or cut short".to_string()));
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        String::from_utf8(line).map_err(|_| malformed("line is not UTF-8".to_string()))
    }
}

/// A response's status line and the headers that frame its body.
struct Head {
    status: u16,
    length: Option<usize>,
    chunked: bool,
    keep_alive: bool,
}

fn malformed(what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed HTTP response: {what}"),
    )
}
