//! COPY's data, apart from the statement that loads or writes it: its formats (`format`: the
//! options, and rows written as text or CSV), the records read back from such bytes
//! (`records`), PostgreSQL's binary format (`binary` reads it, `binary_out` writes it, `binary_arrays` for
//! arrays), and the data exchanged with a client while a COPY from STDIN or to STDOUT
//! runs (`stream`).

pub mod binary;
pub mod binary_arrays;
pub mod binary_out;
pub mod format;
pub mod numeric_binary;
pub mod records;
pub mod stream;
