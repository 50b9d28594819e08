//! rowdex-examples
