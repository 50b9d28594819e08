//! Where a schema change is written. Outside a transaction block, in a store transaction of
//! its own, committed and published when the statement ends (and what it dropped is deleted
//! then). Inside one, in the block's own store transaction: its catalog edits join the block's
//! (`SessionTxn::set_catalog`), its session sees them at once, and they are published, or
//! forgotten, with the block's COMMIT or ROLLBACK.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use rowdex_catalog::CatalogEdits;
use rowdex_store::{KvRead, Transaction};
use tokio::sync::RwLockMappedWriteGuard;

use crate::db::DbState;
use crate::db::txn::SessionTxn;
use crate::error::Result;
use crate::session::Session;
use crate::write::bulk::delete_dropped;

/// One schema change's transaction and the catalog edits it staged.
pub(crate) struct SchemaTxn {
    place: Place,
    edits: CatalogEdits,
}

enum Place {
    Own(Box<dyn Transaction>),
    Block(Arc<SessionTxn>),
}

/// The store transaction a change stages its writes in, borrowed from its [`SchemaTxn`].
pub(crate) enum StoreTx<'a> {
    Own(&'a mut Box<dyn Transaction>),
    Block(RwLockMappedWriteGuard<'a, Box<dyn Transaction>>),
}

impl Deref for StoreTx<'_> {
    type Target = dyn Transaction;

    fn deref(&self) -> &Self::Target {
        match self {
            StoreTx::Own(tx) => tx.as_ref(),
            StoreTx::Block(tx) => tx.as_ref(),
        }
    }
}

impl DerefMut for StoreTx<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            StoreTx::Own(tx) => tx.as_mut(),
            StoreTx::Block(tx) => tx.as_mut(),
        }
    }
}

impl SchemaTxn {
    /// A change in `session`'s open transaction block, or else in a transaction of its own.
    pub(crate) async fn begin(session: &Session) -> Result<SchemaTxn> {
        Ok(match session.open_txn() {
            Some(txn) => SchemaTxn {
                edits: txn.catalog(),
                place: Place::Block(txn),
            },
            None => SchemaTxn {
                place: Place::Own(session.db.store.begin().await?),
                edits: CatalogEdits::default(),
            },
        })
    }

    /// Whether the change is part of a transaction block (published at its COMMIT).
    pub(crate) fn in_block(&self) -> bool {
        matches!(self.place, Place::Block(_))
    }

    /// The store transaction and the edits, to stage a catalog change in. Inside a block the
    /// transaction is locked while held: drop it before reading through [`SchemaTxn::reader`].
    pub(crate) async fn stage(&mut self) -> Result<(StoreTx<'_>, &mut CatalogEdits)> {
        let tx = match &mut self.place {
            Place::Own(tx) => StoreTx::Own(tx),
            Place::Block(txn) => StoreTx::Block(txn.store_tx().await?),
        };
        Ok((tx, &mut self.edits))
    }

    /// What the change reads the table's rows through: its own transaction, with what it
    /// staged.
    pub(crate) fn reader(&self) -> &dyn KvRead {
        match &self.place {
            Place::Own(tx) => tx.as_ref(),
            Place::Block(txn) => txn.as_ref(),
        }
    }

    /// Ends the change: commits and publishes it (deleting what it dropped), or, inside a
    /// block, adds its edits to the block's.
    pub(crate) async fn finish(self, db: &DbState) -> Result<()> {
        match self.place {
            Place::Own(tx) => {
                tx.commit().await?;
                db.catalog.publish(&self.edits).await;
                delete_dropped(db, &self.edits).await
            }
            Place::Block(txn) => {
                txn.set_catalog(self.edits);
                Ok(())
            }
        }
    }
}
