//! Why pingora refused to read a request, told from the bytes it was sent: pingora answers such a
//! request with an empty `400` of its own before any of crawlgate's code runs, so crawlgate reads
//! the header again (with httparse, pingora's own parser) to say what was wrong.

/// pingora's limit on header lines (pingora-core `protocols/http/v1/common.rs`).
const MAX_HEADERS: usize = 256;

/// What was wrong with a request pingora would not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The request line is not `METHOD target HTTP/1.x` (a raw `<`, `>`, `` ` `` or space in
    /// the target, say).
    RequestLine,
    /// A header line is not `name: value`.
    HeaderLine,
    /// More header lines than pingora reads.
    TooManyHeaders,
    /// A header larger than pingora reads.
    TooLarge,
    /// An absolute-form target whose host is not the Host header's.
    HostMismatch,
    /// Content-Length values that disagree, or one that is not a number.
    ContentLength,
    /// A Transfer-Encoding an HTTP/1.0 request may not have, or whose last coding is not
    /// chunked.
    TransferEncoding,
    /// Something else pingora would not read.
    Other,
}

impl Refusal {
    /// Why the request in `header` (its first bytes, up to what was kept) was refused.
    pub fn of(header: &[u8]) -> Refusal {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(header) {
            Err(httparse::Error::TooManyHeaders) => Refusal::TooManyHeaders,
            Err(httparse::Error::Token | httparse::Error::Version) => Refusal::RequestLine,
            Err(_) => Refusal::HeaderLine,
            Ok(httparse::Status::Partial) if header.len() >= super::stream::KEPT => {
                Refusal::TooLarge
            }
            Ok(httparse::Status::Partial) => Refusal::Other,
            Ok(httparse::Status::Complete(_)) => semantic(&request),
        }
    }

    /// The `reason` label of `crawlgate_bad_requests_total`.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::RequestLine => "invalid_request_line",
            Refusal::HeaderLine => "invalid_header_line",
            Refusal::TooManyHeaders => "too_many_headers",
            Refusal::TooLarge => "header_too_large",
            Refusal::HostMismatch => "host_mismatch",
            Refusal::ContentLength => "invalid_content_length",
            Refusal::TransferEncoding => "invalid_transfer_encoding",
            Refusal::Other => "unparsable",
        }
    }

    /// What the client is told.
    pub fn explanation(self) -> &'static str {
        match self {
            Refusal::RequestLine => "its request line is not METHOD TARGET HTTP/1.1 (a target may not hold a raw space, <, >, \" or `: percent-encode them)",
            Refusal::HeaderLine => "a header line is not NAME: VALUE",
            Refusal::TooManyHeaders => "it has more than 256 header lines",
            Refusal::TooLarge => "its header is larger than crawlgate reads",
            Refusal::HostMismatch => "its target names another host than its Host header",
            Refusal::ContentLength => "its Content-Length values disagree or are not a number",
            Refusal::TransferEncoding => "its Transfer-Encoding is not allowed (HTTP/1.0, or not ending in chunked)",
            Refusal::Other => "it is not HTTP/1.1 as RFC 9112 writes it",
        }
    }

    /// The complete response sent in place of pingora's empty one.
    pub fn response(self) -> Vec<u8> {
        let body = format!(
            "crawlgate: this request cannot be read: {}\n",
            self.explanation()
        );
        format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

/// A request httparse reads whole: what pingora's checks after parsing found.
fn semantic(request: &httparse::Request<'_, '_>) -> Refusal {
    fn values<'h>(
        request: &'h httparse::Request<'_, '_>,
        name: &'static str,
    ) -> impl Iterator<Item = &'h [u8]> + 'h {
        request
            .headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }
    // httparse takes any visible byte in a target; the URI pingora builds from it does not.
    let Some(Ok(target)) = request.path.map(str::parse::<http::Uri>) else {
        return Refusal::RequestLine;
    };
    let target_host = target.host().map(str::to_ascii_lowercase);
    if let (Some(target), Some(host)) = (target_host, values(request, "host").next()) {
        let host = String::from_utf8_lossy(host).to_ascii_lowercase();
        let host = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
        if target != host {
            return Refusal::HostMismatch;
        }
    }
    let mut lengths = values(request, "content-length")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(|v| v.trim_ascii());
    if let Some(first) = lengths.next() {
        let number = |v: &[u8]| !v.is_empty() && v.iter().all(u8::is_ascii_digit);
        if !number(first) || lengths.any(|v| v != first) {
            return Refusal::ContentLength;
        }
    }
    if values(request, "transfer-encoding").next().is_some() {
        return Refusal::TransferEncoding;
    }
    Refusal::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_is_told_from_its_bytes() {
        let many: String = (0..300).map(|i| format!("X-{i}: y\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n");
        for (bytes, refusal) in [
            (
                &b"GET /<script> HTTP/1.1\r\nHost: a\r\n\r\n"[..],
                Refusal::RequestLine,
            ),
            (b"GET / HTTP/1.1\r\nHost a\r\n\r\n", Refusal::HeaderLine),
            (many.as_bytes(), Refusal::TooManyHeaders),
            (
                b"GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
                Refusal::HostMismatch,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                Refusal::ContentLength,
            ),
            (
                b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                Refusal::TransferEncoding,
            ),
            (b"GET / HTTP/1.1\r\nHost: a\r\n", Refusal::Other),
        ] {
            assert_eq!(Refusal::of(bytes), refusal, "{}", bytes.escape_ascii());
        }
        let absolute_same = b"GET http://a.test/ HTTP/1.1\r\nHost: A.test:80\r\n\r\n";
        assert_eq!(Refusal::of(absolute_same), Refusal::Other);
    }

    #[test]
    fn the_answer_is_a_complete_response_that_closes() {
        let response = String::from_utf8(Refusal::TooManyHeaders.response()).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(head.contains("Connection: close"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        assert!(body.contains("256 header lines"));
    }
}
