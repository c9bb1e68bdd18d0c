//! A parsed access-log entry written back as a canonical combined log line: the round trip the
//! `access_log` fuzz target and its regression tests check (parse, write, parse again).

use crawlgate::audit::logline::{Entry, Stamp};

/// The entry as a combined line with a fixed client, status and size, or `None` when its time
/// is not bracketed text (a JSON entry's number).
pub fn canonical_combined_line(entry: &Entry<'_>) -> Option<Vec<u8>> {
    let Stamp::Text(time) = &entry.time else {
        return None;
    };
    let mut line = b"192.0.2.1 - - [".to_vec();
    line.extend_from_slice(time);
    line.extend_from_slice(b"] \"");
    match &entry.target {
        Some(target) => {
            line.extend_from_slice(b"GET ");
            line.extend_from_slice(target);
            line.extend_from_slice(b" HTTP/1.1");
        }
        None => line.push(b'-'),
    }
    line.extend_from_slice(b"\" 200 0");
    if let Some(user_agent) = &entry.user_agent {
        line.extend_from_slice(b" \"-\" \"");
        line.extend_from_slice(user_agent);
        line.push(b'"');
    }
    Some(line)
}
