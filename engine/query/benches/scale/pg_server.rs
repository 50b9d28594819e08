//! A PostgreSQL 15 server of the bench's own, started on a free loopback port and stopped by
//! its pid when dropped, and COPY of a CSV file: the code shared by the benches that compare
//! with PostgreSQL, in `benches/common/pg_server.rs`.

include!("../common/pg_server.rs");
