//! Requests over time, in a bounded number of buckets whatever the span of the logs.
//!
//! Buckets are aligned on the epoch and start one minute wide; when the span seen needs more
//! than [`MAX_BUCKETS`], they widen to the next width of a ladder whose every step divides the
//! next (1 min, 5 min, 15 min, 1 h, 3 h, 6 h, 1 day, 1 week, then doublings), so that merging
//! is exact: a coarse bucket is the sum of the fine buckets inside it.

/// The most buckets a timeline holds.
pub const MAX_BUCKETS: usize = 480;

const LADDER: [i64; 8] = [60, 300, 900, 3600, 10_800, 21_600, 86_400, 604_800];

/// What one bucket counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Crawler requests robots.txt allows (robots.txt fetches included).
    pub allowed: u64,
    /// Crawler requests robots.txt disallows.
    pub disallowed: u64,
    /// Requests by people.
    pub people: u64,
}

impl Counts {
    fn merge(&mut self, other: Counts) {
        self.allowed += other.allowed;
        self.disallowed += other.disallowed;
        self.people += other.people;
    }
}

/// Which counter of a bucket a request adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A crawler request robots.txt allows.
    Allowed,
    /// A crawler request robots.txt disallows.
    Disallowed,
    /// A person's request.
    Person,
}

/// Dense buckets from `first` (a bucket number) on.
#[derive(Debug, Clone)]
pub struct Timeline {
    width: i64,
    first: i64,
    buckets: Vec<Counts>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            width: LADDER[0],
            first: 0,
            buckets: Vec::new(),
        }
    }
}

impl Timeline {
    /// Counts one request at `time` (Unix seconds).
    pub fn add(&mut self, time: i64, kind: Kind) {
        let bucket = self.bucket_mut(time);
        match kind {
            Kind::Allowed => bucket.allowed += 1,
            Kind::Disallowed => bucket.disallowed += 1,
            Kind::Person => bucket.people += 1,
        }
    }

    fn bucket_mut(&mut self, time: i64) -> &mut Counts {
        loop {
            let number = time.div_euclid(self.width);
            if self.buckets.is_empty() {
                self.first = number;
                self.buckets.push(Counts::default());
            }
            let last = self.first + self.buckets.len() as i64 - 1;
            let (low, high) = (self.first.min(number), last.max(number));
            if high - low < MAX_BUCKETS as i64 {
                if number < self.first {
                    let missing = (self.first - number) as usize;
                    self.buckets
                        .splice(0..0, std::iter::repeat_n(Counts::default(), missing));
                    self.first = number;
                } else if number > last {
                    let new_len = (number - self.first + 1) as usize;
                    self.buckets.resize(new_len, Counts::default());
                }
                // In range: the buckets were just extended to cover `number`.
                let index = (number - self.first) as usize;
                return &mut self.buckets[index];
            }
            self.widen();
        }
    }

    /// Moves to the next width of the ladder, merging buckets.
    fn widen(&mut self) {
        let next = LADDER
            .iter()
            .copied()
            .find(|&w| w > self.width)
            .unwrap_or_else(|| self.width.saturating_mul(2));
        let factor = next / self.width;
        let first = self.first.div_euclid(factor);
        let mut merged: Vec<Counts> = Vec::with_capacity(self.buckets.len() / 2 + 2);
        for (offset, counts) in self.buckets.iter().enumerate() {
            let index = ((self.first + offset as i64).div_euclid(factor) - first) as usize;
            if merged.len() <= index {
                merged.resize(index + 1, Counts::default());
            }
            if let Some(bucket) = merged.get_mut(index) {
                bucket.merge(*counts);
            }
        }
        self.width = next;
        self.first = first;
        self.buckets = merged;
    }

    /// The width of a bucket, in seconds.
    pub fn width(&self) -> i64 {
        self.width
    }

    /// The buckets as (start in Unix seconds, counts), oldest first, empty ones included.
    pub fn buckets(&self) -> impl Iterator<Item = (i64, Counts)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .map(|(offset, counts)| ((self.first + offset as i64) * self.width, *counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_while_the_span_is_short() {
        let mut t = Timeline::default();
        t.add(125, Kind::Allowed);
        t.add(61, Kind::Disallowed);
        t.add(250, Kind::Person);
        let buckets: Vec<_> = t.buckets().collect();
        assert_eq!(t.width(), 60);
        assert_eq!(buckets.len(), 4);
        assert_eq!(buckets[0].0, 60);
        assert_eq!(buckets[0].1.disallowed, 1);
        assert_eq!(buckets[1].1.allowed, 1);
        assert_eq!(buckets[3].1.people, 1);
    }

    #[test]
    fn long_spans_widen_and_keep_every_count() {
        let mut t = Timeline::default();
        let day = 86_400;
        for i in 0..(400 * 24) {
            t.add(1_700_000_000 + i * 3600, Kind::Allowed);
        }
        t.add(1_600_000_000, Kind::Disallowed);
        assert!(t.buckets().count() <= MAX_BUCKETS);
        assert!(t.width() >= day);
        let total: u64 = t.buckets().map(|(_, c)| c.allowed + c.disallowed).sum();
        assert_eq!(total, 400 * 24 + 1);
        let starts: Vec<i64> = t.buckets().map(|(s, _)| s).collect();
        assert!(starts.windows(2).all(|w| w[1] - w[0] == t.width()));
    }
}
