//! `iron bench control`: measured, never asserted.

use std::time::Duration;

use super::CliError;

pub(super) async fn control(_iterations: usize, _timeout: Duration) -> Result<(), CliError> {
    Err(CliError::Failed("bench control is not built yet".into()))
}
