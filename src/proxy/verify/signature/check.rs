//! Checking one signed request, without I/O: the `web-bot-auth` crate parses `Signature-Input`
//! and `Signature`, picks the label Web Bot Auth requires (`tag="web-bot-auth"`, `keyid`,
//! `created`, `expires`, covering `@authority` or `@target-uri`, and `signature-agent` when
//! that header is sent), builds the signature base from the request and verifies Ed25519;
//! the rest of the draft's requirements (the times, the algorithm, https directories) are here.

use super::keys::KeySet;
use super::MAX_VALIDITY;
use http::HeaderMap;
use sfv013 as sfv;
use sfv013::SerializeValue;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use web_bot_auth::components::{
    CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters,
};
use web_bot_auth::message_signatures::SignedMessage;
use web_bot_auth::WebBotAuthVerifier;

/// What a signature is checked against: the request as the proxy received it.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// Its headers.
    pub headers: &'a HeaderMap,
    /// Its method.
    pub method: &'a str,
    /// Its authority (the Host header, or an absolute-form target's).
    pub authority: &'a str,
    /// Its path and query.
    pub path_and_query: &'a str,
    /// The scheme the client used (`https` behind a TLS listener or terminator).
    pub scheme: &'a str,
}

/// `Signature-Input`, named once: a lookup by a `&str` would parse the name on every request.
static SIGNATURE_INPUT: http::HeaderName = http::HeaderName::from_static("signature-input");

/// Whether a request carries any HTTP message signature: the cheap test every request pays.
pub fn is_signed(headers: &HeaderMap) -> bool {
    headers.contains_key(&SIGNATURE_INPUT)
}

/// `@authority` as RFC 9421 §2.2.3 derives it: lower-cased, without the scheme's default port.
fn authority(view: &RequestView<'_>) -> String {
    let lower = view.authority.trim().to_ascii_lowercase();
    let default_port = if view.scheme == "https" {
        ":443"
    } else {
        ":80"
    };
    match lower.strip_suffix(default_port) {
        Some(host) => host.to_owned(),
        None => lower,
    }
}

impl SignedMessage for RequestView<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(HTTPField { name, parameters }) => {
                let values = self
                    .headers
                    .get_all(name.as_str())
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .map(|v| v.trim().to_owned());
                let mut key = None;
                for parameter in &parameters.0 {
                    match parameter {
                        HTTPFieldParameters::Key(k) => key = Some(k.as_str()),
                        HTTPFieldParameters::Sf => {}
                        // Binary-wrapped, trailer and request-of-response fields are not what a
                        // crawler's request signs: their absence fails the check.
                        _ => return Vec::new(),
                    }
                }
                match key {
                    None => values.collect(),
                    // `;key=`: the dictionary member's value, serialized (RFC 9421 §2.1.2).
                    Some(key) => {
                        let joined = values.collect::<Vec<_>>().join(", ");
                        let Ok(dictionary) = sfv::Parser::new(&joined).parse_dictionary() else {
                            return Vec::new();
                        };
                        match dictionary.get(key) {
                            Some(sfv::ListEntry::Item(item)) => vec![item.serialize_value()],
                            _ => Vec::new(),
                        }
                    }
                }
            }
            CoveredComponent::Derived(derived) => {
                let (path, query) = match self.path_and_query.split_once('?') {
                    Some((path, query)) => (path, Some(query)),
                    None => (self.path_and_query, None),
                };
                let value = match derived {
                    DerivedComponent::Authority { req: false } => authority(self),
                    DerivedComponent::TargetUri { req: false } => {
                        format!(
                            "{}://{}{}",
                            self.scheme,
                            authority(self),
                            self.path_and_query
                        )
                    }
                    DerivedComponent::Method { req: false } => self.method.to_owned(),
                    DerivedComponent::Path { req: false } => path.to_owned(),
                    DerivedComponent::Query { req: false } => format!("?{}", query.unwrap_or("")),
                    DerivedComponent::RequestTarget { req: false } => {
                        self.path_and_query.to_owned()
                    }
                    DerivedComponent::Scheme { req: false } => self.scheme.to_owned(),
                    _ => return Vec::new(),
                };
                vec![value]
            }
        }
    }
}

/// A Web Bot Auth signature, parsed and ready to verify.
pub struct Parsed {
    verifier: WebBotAuthVerifier,
    /// The `https` directory URLs of the `Signature-Agent` members the signature covers, in
    /// their normal form ([`super::agent`]).
    pub agents: Vec<String>,
    /// The signature, decoded.
    pub signature: Vec<u8>,
    /// `keyid`.
    pub keyid: String,
    /// `created`, seconds since the epoch.
    pub created: i64,
    /// `expires`, seconds since the epoch.
    pub expires: i64,
    /// `nonce`, when sent.
    pub nonce: Option<String>,
    /// The pay-per-crawl price headers it covers (their values as sent are in its base).
    pub covers: crate::pricing::Covers,
}

/// Which price headers a signature base covers, as plain fields: a price is read from the
/// field's value, which is what a plain field's signature vouches for.
fn covered_prices(
    base: &web_bot_auth::message_signatures::SignatureBase,
) -> crate::pricing::Covers {
    let mut covers = crate::pricing::Covers::default();
    for component in base.components.keys() {
        if let CoveredComponent::HTTP(HTTPField { name, parameters }) = component {
            if !parameters.0.is_empty() {
                continue;
            }
            match name.as_str() {
                crate::pricing::CRAWLER_EXACT_PRICE => covers.exact = true,
                crate::pricing::CRAWLER_MAX_PRICE => covers.max = true,
                _ => {}
            }
        }
    }
    covers
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("agents", &self.agents)
            .field("keyid", &self.keyid)
            .field("created", &self.created)
            .field("expires", &self.expires)
            .field("nonce", &self.nonce)
            .finish()
    }
}

/// What parsing found.
#[derive(Debug)]
pub enum Checked {
    /// A Web Bot Auth signature.
    Parsed(Box<Parsed>),
    /// Signatures, but none with `tag="web-bot-auth"`: not for crawlgate to judge.
    NotWebBotAuth,
    /// A Web Bot Auth signature that cannot be valid, and why.
    Invalid(String),
}

/// Whether any `Signature-Input` member is tagged `web-bot-auth`.
fn tagged_web_bot_auth(headers: &HeaderMap) -> bool {
    headers
        .get_all("signature-input")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| sfv::Parser::new(v).parse_dictionary().ok())
        .flat_map(|dictionary| dictionary.into_iter())
        .any(|(_, entry)| match entry {
            sfv::ListEntry::InnerList(list) => list
                .params
                .get("tag")
                .and_then(|tag| tag.as_string())
                .is_some_and(|tag| tag.as_str() == "web-bot-auth"),
            sfv::ListEntry::Item(_) => false,
        })
}

/// Parses a request's Web Bot Auth signature.
pub fn parse(view: &RequestView<'_>) -> Checked {
    if !tagged_web_bot_auth(view.headers) {
        return Checked::NotWebBotAuth;
    }
    let verifier = match WebBotAuthVerifier::parse(view) {
        Ok(verifier) => verifier,
        Err(e) => {
            return Checked::Invalid(format!(
                "not a valid Web Bot Auth signature ({e}): it must carry keyid, created, expires and tag=\"web-bot-auth\", and cover @authority (or @target-uri) and signature-agent when that header is sent"
            ))
        }
    };
    let details = &verifier.get_parsed_label().base.parameters.details;
    if details
        .algorithm
        .as_ref()
        .is_some_and(|alg| *alg != web_bot_auth::keyring::Algorithm::Ed25519)
    {
        return Checked::Invalid(
            "alg is not ed25519, the only algorithm Web Bot Auth crawlers use here".into(),
        );
    }
    let (Some(keyid), Some(created), Some(expires)) =
        (details.keyid.clone(), details.created, details.expires)
    else {
        return Checked::Invalid("keyid, created and expires are required".into());
    };
    let nonce = details.nonce.clone();
    // Read from what the signature covers, not from the crate's list (which compares the
    // scheme case-sensitively); an inline key set is no URL, and proves nothing anyway.
    let label = verifier.get_parsed_label();
    let agents = super::agent::covered_directories(&label.base);
    let covers = covered_prices(&label.base);
    let signature = label.signature.clone();
    Checked::Parsed(Box::new(Parsed {
        verifier,
        agents,
        signature,
        keyid,
        created,
        expires,
        nonce,
        covers,
    }))
}

fn unix(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

impl Parsed {
    /// The draft's time checks at `now`: `created` not later than `now + skew`, `expires` after
    /// `created`, at most [`MAX_VALIDITY`] after it, and not before `now - skew`.
    pub fn check_times(&self, now: SystemTime, skew: Duration) -> Result<(), String> {
        let now = unix(now);
        let skew = i64::try_from(skew.as_secs()).unwrap_or(i64::MAX);
        let max = i64::try_from(MAX_VALIDITY.as_secs()).unwrap_or(i64::MAX);
        if self.created > now.saturating_add(skew) {
            return Err(format!(
                "created {} s in the future",
                self.created.saturating_sub(now)
            ));
        }
        if self.expires <= self.created {
            return Err("expires is not after created".into());
        }
        if self.expires.saturating_sub(self.created) > max {
            return Err("valid for more than 24 hours (expires - created)".into());
        }
        if self.expires < now.saturating_sub(skew) {
            return Err(format!(
                "expired {} s ago",
                now.saturating_sub(self.expires)
            ));
        }
        Ok(())
    }

    /// Verifies the signature with the key `keyid` of one directory's keys.
    pub fn verify(self, keys: &KeySet) -> Result<(), String> {
        if keys.ring.get(&self.keyid).is_none() {
            return Err(format!("key {} is not in the directory's keys", self.keyid));
        }
        self.verifier
            .verify(&keys.ring, None)
            .map(|_| ())
            .map_err(|e| format!("the signature does not verify ({e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    /// The draft's (and the crate's) test key: RFC 8037 §A.1's Ed25519 public key.
    const TEST_JWKS: &str = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}"#;
    const TEST_KEYID: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn view<'a>(headers: &'a HeaderMap, authority: &'a str) -> RequestView<'a> {
        RequestView {
            headers,
            method: "GET",
            authority,
            path_and_query: "/",
            scheme: "https",
        }
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    /// The test vector of draft-meunier-web-bot-auth-architecture (as the web-bot-auth crate
    /// carries it): `@authority` example.com, RFC 8037's key.
    fn draft_vector() -> HeaderMap {
        headers(&[
            ("signature", "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:"),
            ("signature-input", r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="gubxywVx7hzbYKatLgzuKDllDAIXAkz41PydU7aOY7vT+Mb3GJNxW0qD4zJ+IOQ1NVtg+BNbTCRUMt1Ojr5BgA==";tag="web-bot-auth""#),
        ])
    }

    fn keys() -> KeySet {
        KeySet::from_jwks(TEST_JWKS.as_bytes(), 8).unwrap()
    }

    fn parsed(headers: &HeaderMap, authority: &str) -> Parsed {
        match parse(&view(headers, authority)) {
            Checked::Parsed(parsed) => *parsed,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_drafts_test_vector_verifies_in_its_validity_window() {
        let headers = draft_vector();
        let p = parsed(&headers, "example.com");
        assert_eq!(p.keyid, TEST_KEYID);
        assert_eq!((p.created, p.expires), (1735689600, 1735693200));
        assert!(p.nonce.is_some() && p.agents.is_empty());
        assert_eq!(
            p.check_times(at(1735690000), Duration::from_secs(60)),
            Ok(())
        );
        assert_eq!(p.verify(&keys()), Ok(()));
        // The default port is not part of @authority; the host is compared lower-cased.
        let p = parsed(&headers, "EXAMPLE.com:443");
        assert_eq!(p.verify(&keys()), Ok(()));
    }

    #[test]
    fn times_outside_the_window_are_refused() {
        let headers = draft_vector();
        let p = parsed(&headers, "example.com");
        let skew = Duration::from_secs(60);
        let expired = p.check_times(at(1735693200 + 61), skew).unwrap_err();
        assert!(expired.contains("expired"), "{expired}");
        assert_eq!(
            p.check_times(at(1735693200 + 59), skew),
            Ok(()),
            "within skew"
        );
        let future = p.check_times(at(1735689600 - 61), skew).unwrap_err();
        assert!(future.contains("future"), "{future}");
        assert_eq!(
            p.check_times(at(1735689600 - 59), skew),
            Ok(()),
            "within skew"
        );
        let long = Parsed {
            expires: p.created + 24 * 3600 + 1,
            ..p
        };
        assert!(long.check_times(at(1735690000), skew).is_err());
    }

    #[test]
    fn a_tampered_authority_or_an_unknown_key_fails() {
        let headers = draft_vector();
        let p = parsed(&headers, "example.org");
        assert!(p.verify(&keys()).unwrap_err().contains("does not verify"));
        let other = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
        let p = parsed(&headers, "example.com");
        let error = p
            .verify(&KeySet::from_jwks(other.as_bytes(), 8).unwrap())
            .unwrap_err();
        assert!(error.contains("not in the directory"), "{error}");
    }

    #[test]
    fn other_tags_are_not_judged_and_missing_coverage_is_invalid() {
        let wrong_tag = headers(&[
            ("signature", "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:"),
            ("signature-input", r#"sig1=("@authority");created=1735689600;keyid="k";expires=1735693200;tag="other""#),
        ]);
        assert!(matches!(
            parse(&view(&wrong_tag, "example.com")),
            Checked::NotWebBotAuth
        ));
        let no_authority = headers(&[
            ("signature", "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:"),
            ("signature-input", r#"sig1=("@method");created=1735689600;keyid="k";expires=1735693200;tag="web-bot-auth""#),
        ]);
        assert!(matches!(
            parse(&view(&no_authority, "example.com")),
            Checked::Invalid(_)
        ));
        // A Signature-Agent sent but not covered: invalid.
        let mut uncovered = draft_vector();
        uncovered.insert(
            "signature-agent",
            HeaderValue::from_static("\"https://signer.example\""),
        );
        assert!(matches!(
            parse(&view(&uncovered, "example.com")),
            Checked::Invalid(_)
        ));
        assert!(!is_signed(&HeaderMap::new()));
    }

    #[test]
    fn signature_agent_in_both_forms_names_https_directories_only() {
        // The crate's own vectors for the dictionary form (`;key=`) and the legacy string.
        let input = r#"sig1=("@authority" "signature-agent";key="agent1");alg="ed25519";keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";nonce="n";tag="web-bot-auth";created=1749331474;expires=1749331484"#;
        let dictionary = headers(&[
            ("signature", "sig1=:AAAA:"),
            ("signature-input", input),
            (
                "signature-agent",
                r#"agent1="https://MyExample.com/", agent2="https://example2.com""#,
            ),
        ]);
        let p = parsed(&dictionary, "example.com");
        assert_eq!(p.agents, vec!["https://myexample.com".to_owned()]);
        // The member's value is what the signature base holds.
        let value =
            view(&dictionary, "example.com").lookup_component(&CoveredComponent::HTTP(HTTPField {
                name: "signature-agent".into(),
                parameters: web_bot_auth::components::HTTPFieldParametersSet(vec![
                    HTTPFieldParameters::Key("agent1".into()),
                ]),
            }));
        assert_eq!(value, vec!["\"https://MyExample.com/\"".to_owned()]);
        let legacy_input = r#"sig1=("@authority" "signature-agent");alg="ed25519";keyid="k";tag="web-bot-auth";created=1749331474;expires=1749331484"#;
        let legacy = headers(&[
            ("signature", "sig1=:AAAA:"),
            ("signature-input", legacy_input),
            ("signature-agent", "\"http://plain.example\""),
            ("signature-agent", "\"https://chatgpt.com\""),
        ]);
        assert_eq!(
            parsed(&legacy, "example.com").agents,
            vec!["https://chatgpt.com".to_owned()]
        );
    }
}
