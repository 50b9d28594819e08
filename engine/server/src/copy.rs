//! COPY over the wire. `COPY ... TO STDOUT` sends the rows rowdex wrote as CopyOutResponse,
//! CopyData and CopyDone; `COPY ... FROM STDIN` keeps the started load ([`rowdex::CopyIn`])
//! while the client sends CopyData, finishes it at CopyDone with `COPY n`, and gives it up at
//! CopyFail or when the connection goes (then nothing more is written).

use std::fmt::Debug;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::results::Tag;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use rowdex::{CopyFormatKind, CopyIn, CopyOut};

use crate::sqlstate::{PROTOCOL_VIOLATION, QUERY_CANCELED, error_info, pg_error};

/// COPY's overall format on the wire: 0 (text) for both text and CSV data.
pub const TEXTUAL: i8 = 0;

/// The overall format of a COPY FROM STDIN's data on the wire: 1 for FORMAT binary, else 0.
pub fn copy_in_format(copy: &CopyIn) -> i8 {
    match copy.format().kind {
        CopyFormatKind::Binary => 1,
        CopyFormatKind::Text | CopyFormatKind::Csv => TEXTUAL,
    }
}

/// The COPY FROM STDIN a connection is receiving data for, if any.
#[derive(Default)]
pub struct PendingCopy {
    pending: Mutex<Option<(CopyIn, String)>>,
}

impl PendingCopy {
    /// Keeps `copy` (started by the statement `sql`) for the data that follows.
    pub fn start(&self, copy: CopyIn, sql: &str) {
        *self.lock() = Some((copy, sql.to_string()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(CopyIn, String)>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self) -> PgWireResult<(CopyIn, String)> {
        self.lock().take().ok_or_else(|| {
            PgWireError::UserError(Box::new(error_info(
                PROTOCOL_VIOLATION,
                "COPY data arrived with no COPY FROM STDIN running",
            )))
        })
    }

    /// Hands the load the next CopyData. An error (the load stopped at a bad row) ends the
    /// COPY; the client's further CopyData is then ignored, as PostgreSQL does.
    pub async fn data(&self, data: Bytes) -> PgWireResult<()> {
        let (mut copy, sql) = self.take()?;
        match copy.send(Vec::from(data)).await {
            Ok(()) => {
                self.start(copy, &sql);
                Ok(())
            }
            Err(error) => Err(pg_error(&error, &sql)),
        }
    }

    /// CopyDone: waits for the load to finish and sends `COPY n`.
    pub async fn done<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (copy, sql) = self.take()?;
        let rows = copy
            .finish()
            .await
            .map_err(|error| pg_error(&error, &sql))?;
        let rows = usize::try_from(rows).unwrap_or(usize::MAX);
        let tag = Tag::new("COPY").with_rows(rows);
        client
            .send(PgWireBackendMessage::CommandComplete(tag.into()))
            .await?;
        Ok(())
    }

    /// CopyFail (or the end of the statement some other way): gives the load up and returns
    /// the error to report, which says how many rows were loaded before.
    pub async fn fail(&self, message: &str) -> PgWireError {
        let loaded = match self.take() {
            Ok((copy, _)) => format!(" ({})", copy.abort().await),
            Err(_) => String::new(),
        };
        PgWireError::UserError(Box::new(error_info(
            QUERY_CANCELED,
            format!("COPY from stdin failed: {message}{loaded}"),
        )))
    }
}

/// Sends what a `COPY ... TO STDOUT` wrote: CopyOutResponse, the data, CopyDone. The caller
/// then sends its `COPY n`.
pub async fn send_copy_out<C>(client: &mut C, copied: CopyOut) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = i16::try_from(copied.columns).unwrap_or(i16::MAX);
    let format: i8 = match copied.format.kind {
        CopyFormatKind::Binary => 1,
        _ => TEXTUAL,
    };
    let formats = vec![i16::from(format); usize::try_from(columns).unwrap_or(0)];
    client
        .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            format, columns, formats,
        )))
        .await?;
    for chunk in copied.chunks {
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(
                chunk,
            ))))
            .await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    Ok(())
}
