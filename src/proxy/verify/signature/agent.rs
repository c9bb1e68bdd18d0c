//! The key directories a signature names: the `Signature-Agent` members it covers, read from
//! the signature base itself, so that a member the signature does not cover is never taken for
//! its directory (the draft: "a verifier MUST NOT attribute a signature to a member that
//! signature does not cover").
//!
//! A member is a string with parameters (`sig1="https://agent.example";type=directory`). The
//! parameters are signed like the rest of the member (RFC 9421 §2.1.2 serializes them into the
//! signature base) but say nothing about which directory it is, so they are ignored, except
//! `type`: absent, `directory` and `jwks_uri` name key sets crawlgate fetches; any other type
//! (such as `cimd`) is a discovery mechanism crawlgate does not have, and its member is ignored,
//! as the draft requires. URLs compare in the normal form of [`super::directory::normalise`],
//! so `HTTPS://Agent.Example` is `https://agent.example`.

use super::directory::normalise;
use sfv013 as sfv;
use web_bot_auth::components::{CoveredComponent, HTTPField, HTTPFieldParameters};
use web_bot_auth::message_signatures::SignatureBase;

/// The directory URLs (normal form) of the `Signature-Agent` members `base` covers, in order;
/// `http` URLs, inline key sets and unsupported types are left out.
pub fn covered_directories(base: &SignatureBase) -> Vec<String> {
    let mut urls = Vec::new();
    for (component, value) in &base.components {
        let CoveredComponent::HTTP(HTTPField { name, parameters }) = component else {
            continue;
        };
        if name != "signature-agent" {
            continue;
        }
        let keyed = parameters
            .0
            .iter()
            .any(|p| matches!(p, HTTPFieldParameters::Key(_)));
        // `;key=` covers one member, serialized as an item; the legacy form covers the whole
        // field, a string (or, over several lines, a list of them).
        let items: Vec<sfv::Item> = if keyed {
            sfv::Parser::new(value).parse_item().into_iter().collect()
        } else {
            match sfv::Parser::new(value).parse_list() {
                Ok(list) => list
                    .into_iter()
                    .filter_map(|entry| match entry {
                        sfv::ListEntry::Item(item) => Some(item),
                        sfv::ListEntry::InnerList(_) => None,
                    })
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        for item in items {
            if let Some(url) = directory_of(&item) {
                if !urls.contains(&url) {
                    urls.push(url);
                }
            }
        }
    }
    urls
}

/// The directory a member names, when its type is one crawlgate resolves.
fn directory_of(item: &sfv::Item) -> Option<String> {
    let supported = match item.params.get("type") {
        None => true,
        Some(kind) => kind
            .as_token()
            .is_some_and(|t| matches!(t.as_str(), "directory" | "jwks_uri")),
    };
    if !supported {
        return None;
    }
    normalise(item.bare_item.as_string()?.as_str()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use web_bot_auth::components::HTTPFieldParametersSet;
    use web_bot_auth::message_signatures::SignatureParams;

    /// A signature base covering these `Signature-Agent` components (`;key=`, value), as the
    /// crate builds one from a request.
    fn base(components: &[(Option<&str>, &str)]) -> SignatureBase {
        let mut base = SignatureBase {
            components: Default::default(),
            parameters: SignatureParams::from(sfv::Parameters::new()),
        };
        for (key, value) in components {
            let parameters = match key {
                Some(key) => vec![HTTPFieldParameters::Key((*key).to_owned())],
                None => Vec::new(),
            };
            base.components.insert(
                CoveredComponent::HTTP(HTTPField {
                    name: "signature-agent".into(),
                    parameters: HTTPFieldParametersSet(parameters),
                }),
                (*value).to_owned(),
            );
        }
        base
    }

    #[test]
    fn parameters_are_ignored_and_urls_compare_in_their_normal_form() {
        for (value, expected) in [
            (r#""https://agent.example""#, Some("https://agent.example")),
            (
                r#""https://agent.example";type=directory"#,
                Some("https://agent.example"),
            ),
            (
                r#""HTTPS://Agent.Example:443/";type=directory;x=1"#,
                Some("https://agent.example"),
            ),
            (
                r#""https://agent.example/jwks.json";type=jwks_uri"#,
                Some("https://agent.example/jwks.json"),
            ),
            (r#""https://agent.example/card";type=cimd"#, None),
            (r#""https://agent.example";type="directory""#, None),
            (r#""http://agent.example""#, None),
            ("garbage(", None),
        ] {
            let got = covered_directories(&base(&[(Some("sig1"), value)]));
            assert_eq!(
                got,
                expected.map(str::to_owned).into_iter().collect::<Vec<_>>(),
                "{value}"
            );
        }
    }

    #[test]
    fn the_legacy_string_and_its_lines_are_read_as_a_list() {
        let legacy = base(&[(None, r#""http://plain.example", "HTTPS://ChatGPT.com""#)]);
        assert_eq!(covered_directories(&legacy), vec!["https://chatgpt.com"]);
        assert!(covered_directories(&base(&[])).is_empty());
    }
}
