//! Statements of the extended query protocol: a Parse message's text prepared by rowdex once
//! ([`rowdex::Prepared`]), with its kind, and its description (parameter types, result
//! columns) worked out the first time a client asks for it.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use pgwire::api::portal::Format;
use pgwire::api::results::FieldInfo;
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, Type};
use pgwire::error::PgWireResult;
use rowdex::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use rowdex::{Description, Prepared, script_statements};
use tokio::sync::OnceCell;

use crate::cursors::{declared_query, parse_fetch};
use crate::declared::wire_schema;
use crate::kind::{KIND_WORDS, Kind};
use crate::pg_catalog::introspection::lookup_parameter_types;
use crate::pg_catalog::rewrite::rewrite;
use crate::prepared_statements::SqlStatement;
use crate::sql_prepared::executed_statement;
use crate::sqlstate::pg_error;
use crate::state::SessionState;
use crate::types::{parameter_type, row_fields, wire_fields};

/// One parsed statement of a connection.
#[derive(Debug)]
pub struct WireStatement {
    pub sql: String,
    pub kind: Kind,
    /// The statement prepared by rowdex; None for what the server answers itself (SET, SHOW
    /// of a parameter).
    pub prepared: Option<Prepared>,
    /// A FETCH's columns: those of its cursor when the statement was parsed.
    cursor_columns: Option<SchemaRef>,
    /// The SQL-level prepared statement an EXECUTE runs, as it was when parsed.
    executes: Option<Arc<SqlStatement>>,
    /// Parameter types the statement's text fixed where rowdex's inference would differ
    /// (`pg_catalog::introspection::lookup_parameter_types`).
    fixed_parameters: Option<Vec<Type>>,
    description: OnceCell<Description>,
    /// The described result as sent (its wire schema), and its row description per result
    /// format asked for: worked out once, not at every Describe and Execute of a portal.
    wire: OnceLock<SchemaRef>,
    row_descriptions: Mutex<Vec<(FormatKey, Arc<Vec<FieldInfo>>)>>,
}

/// A result format as a comparable key (pgwire's `Format` is not).
#[derive(Debug, Clone, PartialEq, Eq)]
enum FormatKey {
    Text,
    Binary,
    Individual(Vec<i16>),
}

impl FormatKey {
    fn of(format: &Format) -> FormatKey {
        match format {
            Format::UnifiedText => FormatKey::Text,
            Format::UnifiedBinary => FormatKey::Binary,
            Format::Individual(formats) => FormatKey::Individual(formats.clone()),
        }
    }
}

impl WireStatement {
    /// The statement's parameter types and result columns.
    pub async fn description(&self) -> rowdex::Result<&Description> {
        self.description
            .get_or_try_init(|| async {
                match (&self.prepared, &self.kind) {
                    // A DECLARE takes its query's parameters and returns no rows.
                    (Some(prepared), Kind::Declare) => Ok(Description {
                        columns: None,
                        ..prepared.describe().await?
                    }),
                    (Some(prepared), _) => prepared.describe().await,
                    (None, Kind::Fetch) => Ok(Description {
                        parameters: Vec::new(),
                        columns: self.cursor_columns.clone(),
                    }),
                    (None, Kind::Execute) => Ok(Description {
                        parameters: Vec::new(),
                        columns: match &self.executes {
                            Some(kept) => kept.prepared().describe().await?.columns,
                            None => None,
                        },
                    }),
                    (None, Kind::ShowParameter(name)) => Ok(Description {
                        parameters: Vec::new(),
                        columns: Some(Arc::new(Schema::new(vec![Field::new(
                            name.to_lowercase(),
                            ArrowType::Utf8,
                            false,
                        )]))),
                    }),
                    (None, _) => Ok(Description {
                        parameters: Vec::new(),
                        columns: None,
                    }),
                }
            })
            .await
    }

    /// The description, if a client asked for it already.
    pub fn described(&self) -> Option<&Description> {
        self.description.get()
    }

    /// The described result's wire schema and its row description in `format`; None when
    /// the statement was not described or returns no rows.
    pub fn described_rows(
        &self,
        format: &Format,
    ) -> PgWireResult<Option<(SchemaRef, Arc<Vec<FieldInfo>>)>> {
        let Some(columns) = self.described().and_then(|d| d.columns.as_ref()) else {
            return Ok(None);
        };
        let wire = self.wire.get_or_init(|| wire_schema(columns)).clone();
        let key = FormatKey::of(format);
        let mut known = self
            .row_descriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, fields)) = known.iter().find(|(k, _)| *k == key) {
            return Ok(Some((wire, fields.clone())));
        }
        let fields = Arc::new(wire_fields(&wire, format)?);
        known.push((key, fields.clone()));
        Ok(Some((wire, fields)))
    }

    /// How many parameters the statement takes.
    pub fn parameter_count(&self) -> usize {
        self.prepared.as_ref().map_or(0, Prepared::parameter_count)
    }

    /// The parameter types to describe: those the client gave at Parse, then those the
    /// statement fixed, rowdex's inference for the others.
    pub fn parameter_types(&self, given: &[Option<Type>], inferred: &Description) -> Vec<Type> {
        (0..self.parameter_count().max(given.len()))
            .map(|i| {
                given
                    .get(i)
                    .cloned()
                    .flatten()
                    .filter(|t| *t != Type::UNKNOWN)
                    .or_else(|| self.fixed_parameters.as_ref()?.get(i).cloned())
                    .unwrap_or_else(|| {
                        parameter_type(inferred.parameters.get(i).and_then(Option::as_deref))
                    })
            })
            .collect()
    }
}

/// Turns Parse messages into [`WireStatement`]s for one connection.
pub struct StatementParser {
    state: Arc<SessionState>,
}

impl StatementParser {
    pub fn new(state: Arc<SessionState>) -> Self {
        StatementParser { state }
    }
}

#[async_trait]
impl QueryParser for StatementParser {
    type Statement = Arc<WireStatement>;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.state.start(client);
        // A catalog query in PostgreSQL's dialect is prepared as rowdex's SQL.
        let rewritten = rewrite(sql);
        let runs = rewritten.as_deref().unwrap_or(sql);
        let parsed = script_statements(runs).and_then(|statements| {
            let words = statements
                .first()
                .map(|s| s.leading_words(KIND_WORDS))
                .unwrap_or_default();
            let kind = Kind::of(&words, |name| self.state.knows_parameter(name));
            let prepared = match kind {
                Kind::Set
                | Kind::Reset
                | Kind::ShowParameter(_)
                | Kind::Fetch
                | Kind::Move
                | Kind::Close
                | Kind::Prepare
                | Kind::Execute
                | Kind::CreateExtension => None,
                // A DECLARE prepares its cursor's query, parameters and all.
                Kind::Declare => match declared_query(runs) {
                    Some(query) => Some(self.state.session.prepare(&query)?),
                    None => None,
                },
                _ => Some(self.state.session.prepare(runs)?),
            };
            Ok((kind, prepared))
        });
        match parsed {
            Ok((kind, prepared)) => Ok(Some(Arc::new(WireStatement {
                sql: sql.to_string(),
                cursor_columns: match kind {
                    Kind::Fetch => {
                        fetched_cursor(runs).and_then(|cursor| self.state.cursors().schema(&cursor))
                    }
                    _ => None,
                },
                executes: match kind {
                    Kind::Execute => executed_statement(&self.state, runs),
                    _ => None,
                },
                fixed_parameters: lookup_parameter_types(runs),
                kind,
                prepared,
                description: OnceCell::new(),
                wire: OnceLock::new(),
                row_descriptions: Mutex::default(),
            }))),
            Err(error) => {
                // As in PostgreSQL, an error in a transaction block fails the block.
                self.state.fail_block_if_open();
                Err(pg_error(&error, sql))
            }
        }
    }

    fn get_parameter_types(&self, statement: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(match statement.described() {
            Some(description) => statement.parameter_types(&[], description),
            None => vec![Type::TEXT; statement.parameter_count()],
        })
    }

    fn get_result_schema(
        &self,
        statement: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        match statement.described().and_then(|d| d.columns.as_ref()) {
            Some(schema) => row_fields(schema, column_format.unwrap_or(&Format::UnifiedText)),
            None => Ok(Vec::new()),
        }
    }
}

/// The cursor a FETCH reads.
fn fetched_cursor(sql: &str) -> Option<String> {
    parse_fetch(sql, "FETCH").ok().map(|fetch| fetch.cursor)
}
