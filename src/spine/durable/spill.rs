//! Events larger than one log message. Both backends refuse a message over their limit (1 MiB
//! embedded, the server's `max_payload` on NATS, 1 MB by default), yet some events Iron must
//! keep are larger: a refresh of many feeds, a job step's result, an expert's recorded loop.
//!
//! [`AnyLog`](super::AnyLog) therefore spills such a payload: the bytes go to the object store
//! (bucket [`BUCKET`], named by their SHA-256, so writing one twice stores it once), and the log
//! gets a short line in their place that names them:
//!
//! ```text
//! iron-spilled:v1 sha256=<64 hex digits> bytes=<length>
//! ```
//!
//! Reads and consumers of `AnyLog` put the bytes back before anyone sees the message, checking
//! the digest, so readers never learn that an event was spilled. The object is written before
//! the line: a crash between the two leaves an object nobody names, never a line naming nothing.
//! The message id, the subject and fencing are those of the event, so deduplication and a
//! writer's fence work as for any append. A payload over [`MAX_EVENT_BYTES`] is still refused
//! ([`DurableError::TooLarge`]): past that, the writer is sending more than one event should
//! carry.

use sha2::{Digest, Sha256};

use crate::core::durable::{AppendRequest, DurableError, ObjectStore, StoredMessage};

/// The object-store bucket spilled payloads are kept in.
pub const BUCKET: &str = "spilled";

/// The largest event the log takes, spilled or not.
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// What a spilled message's line starts with.
const MARK: &str = "iron-spilled:v1 ";

/// Room kept under the backend's limit for the message-id header and the protocol's framing.
const FRAMING: usize = 1024;

/// `request` as the log should store it: unchanged when it fits one message of a backend whose
/// limit is `limit`, else its payload stored in the object store and replaced by the line that
/// names it. A payload that itself starts as such a line is spilled whatever its size, so that
/// it reads back as written. Refuses a payload over [`MAX_EVENT_BYTES`].
pub(super) async fn spill<S: ObjectStore>(
    store: &S,
    limit: usize,
    mut request: AppendRequest,
) -> Result<AppendRequest, DurableError> {
    let size = request.payload.len() + request.msg_id.len();
    if size + FRAMING <= limit && !request.payload.starts_with(MARK.as_bytes()) {
        return Ok(request);
    }
    if request.payload.len() > MAX_EVENT_BYTES {
        return Err(DurableError::TooLarge {
            size: request.payload.len(),
            max: MAX_EVENT_BYTES,
        });
    }
    let digest = hex::encode(Sha256::digest(&request.payload));
    let line = format!("{MARK}sha256={digest} bytes={}", request.payload.len());
    store.object_open(BUCKET).await?;
    store
        .object_put(BUCKET, &digest, std::mem::take(&mut request.payload))
        .await?;
    request.payload = line.into_bytes();
    Ok(request)
}

/// The payload `message` stands for when it is a spilled one (checked against the digest and
/// length its line names); `None` for any other message, which is its own payload.
pub(super) async fn restored<S: ObjectStore>(
    store: &S,
    message: &StoredMessage,
) -> Result<Option<Vec<u8>>, DurableError> {
    let Some(line) = message.payload.strip_prefix(MARK.as_bytes()) else {
        return Ok(None);
    };
    let broken = |why: String| DurableError::Backend {
        op: "read a spilled message",
        source: format!("message {} on {}: {why}", message.seq, message.subject).into(),
    };
    let (digest, bytes) = parse(line).ok_or_else(|| {
        broken(format!(
            "its line {:?} does not name an object",
            String::from_utf8_lossy(line)
        ))
    })?;
    store.object_open(BUCKET).await?;
    let payload = store
        .object_get(BUCKET, digest)
        .await?
        .ok_or_else(|| broken(format!("object {digest} is missing from bucket {BUCKET}")))?;
    if payload.len() != bytes || hex::encode(Sha256::digest(&payload)) != digest {
        return Err(broken(format!(
            "object {digest} in bucket {BUCKET} does not match the digest and length the log names"
        )));
    }
    Ok(Some(payload))
}

/// The digest and length a spilled message's line names.
fn parse(line: &[u8]) -> Option<(&str, usize)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut fields = line.split(' ');
    let digest = fields.next()?.strip_prefix("sha256=")?;
    let bytes = fields.next()?.strip_prefix("bytes=")?.parse().ok()?;
    let whole = fields.next().is_none()
        && digest.len() == 64
        && digest
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    whole.then_some((digest, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_a_lowercase_digest_and_a_length_and_nothing_else() {
        let digest = "a".repeat(64);
        assert_eq!(
            parse(format!("sha256={digest} bytes=12").as_bytes()),
            Some((digest.as_str(), 12))
        );
        for bad in [
            format!("sha256={digest} bytes=12 extra"),
            format!("sha256={} bytes=12", "A".repeat(64)),
            format!("sha256={} bytes=12", "a".repeat(63)),
            format!("sha256={digest} bytes=-1"),
            format!("bytes=12 sha256={digest}"),
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad}");
        }
    }
}
