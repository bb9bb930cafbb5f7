//! Calling a ROS 2 service from a process that may have just started (or whose server has):
//! a fresh client can fail at once while discovery settles, which is not the server's answer.

use std::time::Duration;

use hiroz::{
    msg::{ZDeserializer, ZMessage, ZService},
    service::ZClient,
};

/// Why a bounded call got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    /// Nothing came back within the whole timeout (the request may have run).
    TimedOut,
    /// The service stayed unreachable past the discovery window; the last error.
    Unreachable(String),
}

/// Sends `request` to `client` within `timeout`. While the service is not routable (an error
/// that is not a timeout, within `discovery`) it is sent again every 50 ms; a timeout is final,
/// so a request that reached the server is never sent twice.
pub async fn call_while_discovering<T>(
    client: &ZClient<T>,
    request: &T::Request,
    timeout: Duration,
    discovery: Duration,
) -> Result<T::Response, CallFailure>
where
    T: ZService,
    T::Request: ZMessage,
    T::Response: ZMessage,
    for<'a> <T::Response as ZMessage>::Serdes:
        ZDeserializer<Output = T::Response, Input<'a> = &'a [u8]>,
{
    let started = tokio::time::Instant::now();
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(CallFailure::TimedOut);
        }
        match client.call_with_timeout(request, left).await {
            Ok(response) => return Ok(response),
            Err(e) if hiroz::error::is_timeout(e.as_ref()) => return Err(CallFailure::TimedOut),
            Err(e) if started.elapsed() < discovery.min(timeout) => {
                tracing::debug!("service not reachable yet: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(CallFailure::Unreachable(e.to_string())),
        }
    }
}
