//! How a message leaves the system through a mesh's declared `delivery:` channels, for both who
//! may send: the engine (a reply to the person who asked, on the channel the question came
//! from) and an expert holding a `delivery:` grant (the built-in `deliver` tool).
//!
//! A channel is the terminal (printed by the process that delivers) or a tool on a `native` or
//! `remote` bridge, called with the channel's argument template filled in: `{dest}`, `{text}`,
//! `{source}` and `{delivery_id}` are replaced inside strings, and an argument written exactly
//! `"{data}"` takes the structured payload as it is (an object stays an object).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use thiserror::Error;

use crate::aem::{DeliveryChannel, MeshEntry, ServerDescriptor};
use crate::tools::{RemoteCaller, RosTools, remote::RemoteError};

/// Why a message was not delivered.
#[derive(Debug, Error)]
pub enum DeliveryError {
    /// The mesh declares no such channel.
    #[error("mesh {mesh} declares no delivery channel {channel:?}")]
    UnknownChannel {
        /// The mesh.
        mesh: String,
        /// The channel.
        channel: String,
    },
    /// The channel's server is not one of the mesh's.
    #[error("mesh {mesh} has no server {server}")]
    UnknownServer {
        /// The mesh.
        mesh: String,
        /// The server.
        server: String,
    },
    /// The channel's server is a local (stdio) one, which only an expert's manager runs.
    #[error("{0} is a local (stdio) server; delivery goes only through native or remote bridges")]
    LocalServer(String),
    /// The bridge did not deliver.
    #[error("{server}/{tool}: {source}")]
    Bridge {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Why.
        #[source]
        source: RemoteError,
    },
}

/// What one delivery carries.
#[derive(Debug, Clone, Default)]
pub struct Message<'a> {
    /// Where it goes within the channel (chat id, address; `""` for the channel's default).
    pub dest: &'a str,
    /// The text.
    pub text: &'a str,
    /// The channel the conversation came in on.
    pub source: &'a str,
    /// The sender's id for this delivery (lets a bridge refuse a second send).
    pub delivery_id: &'a str,
    /// A structured payload for `"{data}"` arguments.
    pub data: Option<&'a Value>,
}

/// Sends `message` through `channel` of `mesh`; the answer is what to record
/// (`{"delivered": true, …}`), or why it was not delivered.
pub async fn send(
    tools: &RosTools,
    mesh: &MeshEntry,
    channel: &str,
    message: &Message<'_>,
    caller: &RemoteCaller,
    printed_by: &str,
) -> Result<Value, DeliveryError> {
    match mesh.delivery.get(channel) {
        None => Err(DeliveryError::UnknownChannel {
            mesh: mesh.name.clone(),
            channel: channel.to_string(),
        }),
        Some(DeliveryChannel::Terminal) => {
            let dest = if message.dest.is_empty() {
                "terminal"
            } else {
                message.dest
            };
            println!("[{printed_by} -> {dest}] {}", message.text);
            Ok(json!({"delivered": true, "via": "terminal"}))
        }
        Some(DeliveryChannel::Tool {
            server, tool, args, ..
        }) => {
            let service = match mesh.servers.get(server).map(|s| &s.descriptor) {
                Some(ServerDescriptor::Native) => format!("/iron/tools/{server}"),
                Some(ServerDescriptor::Remote { service }) => service.clone(),
                Some(ServerDescriptor::Local { .. }) => {
                    return Err(DeliveryError::LocalServer(server.clone()));
                }
                None => {
                    return Err(DeliveryError::UnknownServer {
                        mesh: mesh.name.clone(),
                        server: server.clone(),
                    });
                }
            };
            let arguments = Value::Object(fill_args(args, message));
            let result = tools
                .call_service(&service, tool, &arguments, caller)
                .await
                .map_err(|source| DeliveryError::Bridge {
                    server: server.clone(),
                    tool: tool.clone(),
                    source,
                })?;
            Ok(json!({"delivered": true, "via": format!("{server}/{tool}"), "result": result}))
        }
    }
}

/// The channel's argument template filled in with `message`.
pub fn fill_args(
    template: &BTreeMap<String, String>,
    message: &Message<'_>,
) -> serde_json::Map<String, Value> {
    let values = [
        ("dest", message.dest),
        ("source", message.source),
        ("text", message.text),
        ("delivery_id", message.delivery_id),
    ];
    template
        .iter()
        .filter_map(|(k, v)| {
            let value = if v == "{data}" {
                message.data.cloned()?
            } else {
                Value::String(fill(v, &values))
            };
            Some((k.clone(), value))
        })
        .collect()
}

/// Replaces each `{name}` in `template` with its value, in one pass: a value that itself
/// contains `{text}` is not expanded again. Unknown names stay as written.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let known = after.find('}').and_then(|close| {
            values
                .iter()
                .find(|(name, _)| *name == &after[..close])
                .map(|(_, value)| (close, *value))
        });
        match known {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_once_and_keep_unknown_names() {
        let values = [("dest", "#desk {text}"), ("text", "bridge {closed}")];
        assert_eq!(
            fill("to {dest}: {text} {other}", &values),
            "to #desk {text}: bridge {closed} {other}"
        );
        assert_eq!(fill("{", &values), "{");
        assert_eq!(fill("}{dest", &values), "}{dest");
    }

    #[test]
    fn data_arguments_keep_their_type_and_are_left_out_without_data() {
        let template: BTreeMap<String, String> = [
            ("dest".to_string(), "{dest}".to_string()),
            ("text".to_string(), "{text}".to_string()),
            ("delivery_id".to_string(), "{delivery_id}".to_string()),
            ("bulletin".to_string(), "{data}".to_string()),
        ]
        .into();
        let data = json!({"id": "b-1", "claims": []});
        let m = Message {
            dest: "terminal",
            text: "hello",
            delivery_id: "b-1",
            data: Some(&data),
            ..Message::default()
        };
        let args = fill_args(&template, &m);
        assert_eq!(args["bulletin"], data);
        assert_eq!(args["delivery_id"], "b-1");
        let without = fill_args(
            &template,
            &Message {
                data: None,
                ..m.clone()
            },
        );
        assert!(!without.contains_key("bulletin"));
    }
}
