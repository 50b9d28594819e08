//! PostgreSQL's hash functions: `md5(text|bytea)`, the digest as lower-case hex text, and
//! `sha224`, `sha256`, `sha384`, `sha512` (`bytea`), the digest as bytes. Text is hashed as
//! its UTF-8 bytes, as PostgreSQL hashes a text argument in a UTF-8 database. Written here
//! rather than by turning on DataFusion's `crypto_expressions`, which builds blake2 and blake3
//! as well, for functions PostgreSQL does not have.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BinaryArray, BinaryBuilder, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use md5::Md5;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use crate::error::Error;

/// Registers the hash functions in `ctx`.
pub(crate) fn register_hash_functions(ctx: &SessionContext) {
    for hash in [
        Hash::Md5,
        Hash::Sha224,
        Hash::Sha256,
        Hash::Sha384,
        Hash::Sha512,
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(HashFunction {
            hash,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Hash {
    Md5,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn name(self) -> &'static str {
        match self {
            Hash::Md5 => "md5",
            Hash::Sha224 => "sha224",
            Hash::Sha256 => "sha256",
            Hash::Sha384 => "sha384",
            Hash::Sha512 => "sha512",
        }
    }

    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Hash::Md5 => Md5::digest(bytes).to_vec(),
            Hash::Sha224 => Sha224::digest(bytes).to_vec(),
            Hash::Sha256 => Sha256::digest(bytes).to_vec(),
            Hash::Sha384 => Sha384::digest(bytes).to_vec(),
            Hash::Sha512 => Sha512::digest(bytes).to_vec(),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HashFunction {
    hash: Hash,
    signature: Signature,
}

impl ScalarUDFImpl for HashFunction {
    fn name(&self) -> &str {
        self.hash.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(match self.hash {
            Hash::Md5 => DataType::Utf8,
            _ => DataType::Binary,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let Some(argument) = args.args.first() else {
            return Err(Error::Unsupported {
                what: format!("{}() without an argument", self.hash.name()),
            }
            .into());
        };
        let input = argument.to_array(args.number_rows)?;
        Ok(ColumnarValue::Array(digests(self.hash, &input)?))
    }
}

/// The digest of every value of `input` (text or bytes); NULL stays NULL.
fn digests(hash: Hash, input: &ArrayRef) -> DfResult<ArrayRef> {
    let bytes = match input.data_type() {
        DataType::Null => cast(input, &DataType::Binary)?,
        DataType::Utf8
        | DataType::Utf8View
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::BinaryView
        | DataType::LargeBinary => cast(input, &DataType::Binary)?,
        other => {
            return Err(Error::Unsupported {
                what: format!("{}() of a {other} value (text or bytea)", hash.name()),
            }
            .into());
        }
    };
    let Some(bytes) = bytes.as_any().downcast_ref::<BinaryArray>() else {
        return Err(Error::Unsupported {
            what: format!("{}() of this value", hash.name()),
        }
        .into());
    };
    if hash == Hash::Md5 {
        let mut out = StringBuilder::with_capacity(bytes.len(), bytes.len() * 32);
        for value in bytes {
            match value {
                None => out.append_null(),
                Some(value) => out.append_value(hex(&hash.digest(value))),
            }
        }
        return Ok(Arc::new(out.finish()));
    }
    let mut out = BinaryBuilder::with_capacity(bytes.len(), bytes.len() * 64);
    for value in bytes {
        match value {
            None => out.append_null(),
            Some(value) => out.append_value(hash.digest(value)),
        }
    }
    Ok(Arc::new(out.finish()))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0F)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;

    #[test]
    fn digests_are_postgresqls() {
        let input: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let md5 = digests(Hash::Md5, &input).expect("md5");
        let md5 = md5.as_any().downcast_ref::<StringArray>().expect("text");
        // SELECT md5('a') in PostgreSQL 15.
        assert_eq!(md5.value(0), "0cc175b9c0f1b6a831c399e269772661");
        assert!(md5.is_null(1));
        let sha = digests(Hash::Sha256, &input).expect("sha256");
        let sha = sha.as_any().downcast_ref::<BinaryArray>().expect("bytes");
        // SELECT encode(sha256('a'), 'hex').
        assert_eq!(
            hex(sha.value(0)),
            "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
        );
    }
}
