//! The error a function gives for arguments it does not take.

use crate::error::Error;

/// `function` refused its arguments: it takes `takes` (`a zone and a timestamp`).
pub(crate) fn takes_only(
    function: &'static str,
    takes: &str,
) -> datafusion::error::DataFusionError {
    Error::BadFunctionArgument {
        function,
        reason: format!("it takes {takes}"),
    }
    .into()
}
