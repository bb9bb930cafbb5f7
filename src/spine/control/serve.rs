//! Serving one ROS 2 service from a task: take requests until stopped, answer each with a
//! handler, and log (never panic on) a request that does not decode.

use hiroz::{
    msg::{ZDeserializer, ZMessage, ZService},
    service::{ServiceRequest, ZServer},
};
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// Takes requests from `server` until `stop` fires and hands each decoded one to `handle`.
/// A request whose payload or attachment does not decode is dropped with a log line; Zenoh then
/// closes the query, so the caller fails at once instead of waiting.
pub(crate) fn spawn_server<T, H, Fut>(
    mut server: ZServer<T>,
    what: String,
    stop: CancellationToken,
    handle: H,
) where
    T: ZService + Send + Sync + 'static,
    T::Request: ZMessage + Send + Sync + 'static,
    for<'a> <T::Request as ZMessage>::Serdes:
        ZDeserializer<Output = T::Request, Input<'a> = &'a [u8]>,
    H: Fn(ServiceRequest<T>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let req = tokio::select! {
                r = server.async_take_request() => r,
                _ = stop.cancelled() => break,
            };
            match req {
                Ok(req) => handle(req).await,
                Err(e) => warn!(service = %what, "dropped a malformed request: {e}"),
            }
        }
    });
}

/// Declares the service `name` on `node` and serves it with `handle` until `stop` (see
/// [`spawn_server`]).
pub(crate) fn serve_service<T, H, Fut>(
    node: &hiroz::node::ZNode,
    name: &str,
    stop: CancellationToken,
    handle: H,
) -> Result<(), super::ControlError>
where
    T: ZService + hiroz::ServiceTypeInfo + Send + Sync + 'static,
    T::Request: ZMessage + hiroz::WithTypeInfo + Send + Sync + 'static,
    T::Response: hiroz::WithTypeInfo,
    for<'a> <T::Request as ZMessage>::Serdes:
        ZDeserializer<Output = T::Request, Input<'a> = &'a [u8]>,
    H: Fn(ServiceRequest<T>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    use hiroz::Builder;
    let server =
        node.create_service::<T>(name)
            .build()
            .map_err(|source| super::ControlError::Declare {
                what: format!("service {name}"),
                source,
            })?;
    spawn_server(server, name.to_string(), stop, handle);
    Ok(())
}

/// Answers `req` with `resp`, logging a failure to send.
pub(crate) async fn answer<T>(req: ServiceRequest<T>, resp: &T::Response, what: &str)
where
    T: ZService,
    T::Response: ZMessage,
{
    if let Err(e) = req.reply(resp).await {
        warn!(service = %what, "could not send the reply: {e}");
    }
}
