//! Which webhook URLs the delivery bridge may post to. An allowed entry is an `http(s)` URL;
//! a destination is allowed only when, both parsed, it has the entry's scheme, host and port,
//! no user information (`http://allowed@elsewhere/` is elsewhere), and a path inside the
//! entry's path (segment by segment: `/hook` allows `/hook` and `/hook/x`, not `/hooks`).
//! Comparing parsed URLs, never text prefixes, is what keeps a destination from borrowing an
//! allowed prefix. Redirects are not followed by the bridge at all.

use reqwest::Url;
use thiserror::Error;

/// The allowed webhook URLs.
#[derive(Debug, Clone, Default)]
pub struct AllowList(Vec<Url>);

/// An allow-list entry that cannot be read, or a destination it does not allow.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WebhookError {
    /// Not a URL at all.
    #[error("{url:?} is not a URL: {source}")]
    NotUrl {
        /// The text.
        url: String,
        /// The parser's reason.
        #[source]
        source: url::ParseError,
    },
    /// An entry that is not `http(s)` or has no host.
    #[error("{0:?} is not an http(s) URL with a host")]
    NotHttp(String),
    /// An entry with user information.
    #[error("{0:?} carries user information; list the host only")]
    EntryUserInfo(String),
    /// An entry with a query or fragment.
    #[error("{0:?} has a query or fragment; list a path prefix")]
    EntryQuery(String),
    /// A destination with user information (`http://allowed@elsewhere/` is elsewhere).
    #[error("{0} carries user information, which no allowed webhook does")]
    DestUserInfo(String),
    /// A destination no entry allows.
    #[error("{dest} is not an allowed webhook ({allowed})")]
    NotAllowed {
        /// The destination.
        dest: String,
        /// The list, described.
        allowed: String,
    },
}

impl AllowList {
    /// Reads a comma-separated list (empty entries ignored). An entry that is not an
    /// `http(s)` URL, or that carries user information, a query or a fragment, is an error:
    /// an allow-list that cannot be read allows nothing, loudly.
    pub fn parse(list: &str) -> Result<Self, WebhookError> {
        let mut allowed = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let url = parse_url(entry)?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(WebhookError::NotHttp(entry.into()));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(WebhookError::EntryUserInfo(entry.into()));
            }
            if url.query().is_some() || url.fragment().is_some() {
                return Err(WebhookError::EntryQuery(entry.into()));
            }
            allowed.push(url);
        }
        Ok(Self(allowed))
    }

    /// The parsed destination when it is allowed, else why not.
    pub fn check(&self, dest: &str) -> Result<Url, WebhookError> {
        let url = parse_url(dest)?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookError::DestUserInfo(dest.into()));
        }
        if self.0.iter().any(|a| allows(a, &url)) {
            Ok(url)
        } else {
            Err(WebhookError::NotAllowed {
                dest: dest.into(),
                allowed: self.describe(),
            })
        }
    }

    /// The entries, for messages.
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            "none are allowed".into()
        } else {
            let list: Vec<&str> = self.0.iter().map(Url::as_str).collect();
            format!("allowed: {}", list.join(", "))
        }
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn parse_url(text: &str) -> Result<Url, WebhookError> {
    Url::parse(text).map_err(|source| WebhookError::NotUrl {
        url: text.into(),
        source,
    })
}

fn allows(allowed: &Url, dest: &Url) -> bool {
    let base = allowed.path().trim_end_matches('/');
    let path = dest.path();
    allowed.scheme() == dest.scheme()
        && allowed.host_str() == dest.host_str()
        && allowed.port_or_known_default() == dest.port_or_known_default()
        && (path == base
            || base.is_empty()
            || path
                .strip_prefix(base)
                .is_some_and(|rest| rest.starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_origin_and_paths_are_allowed() {
        let list =
            AllowList::parse("http://127.0.0.1:19000, https://hooks.example/team/a").unwrap();
        assert!(list.check("http://127.0.0.1:19000/x").is_ok());
        assert!(list.check("http://127.0.0.1:19000").is_ok());
        assert!(list.check("https://hooks.example/team/a").is_ok());
        assert!(list.check("https://hooks.example/team/a/b?x=1").is_ok());
        assert!(list.check("https://HOOKS.example:443/team/a/b").is_ok());
        for bad in [
            "http://127.0.0.1:19000@127.0.0.1:19002/x",
            "http://user:pw@127.0.0.1:19000/x",
            "http://127.0.0.1:19002/x",
            "https://127.0.0.1:19000/x",
            "http://127.0.0.1:190001/x",
            "https://hooks.example/team/ab",
            "https://hooks.example/team",
            "https://hooks.example.evil/team/a",
            "http://hooks.example/team/a",
            "not a url",
        ] {
            assert!(list.check(bad).is_err(), "{bad} must be refused");
        }
        let err = list
            .check("http://127.0.0.1:19000@127.0.0.1:19002/x")
            .unwrap_err();
        assert!(matches!(err, WebhookError::DestUserInfo(_)), "{err}");
    }

    #[test]
    fn an_unreadable_entry_is_an_error_not_ignored() {
        assert!(AllowList::parse("").unwrap().is_empty());
        for bad in ["ftp://x", "127.0.0.1:19000", "http://u@x/", "http://x/?a=1"] {
            assert!(AllowList::parse(bad).is_err(), "{bad}");
        }
    }
}
