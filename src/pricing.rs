//! Pay per crawl, apart from any I/O: what a site charges a verified crawler for a page
//! robots.txt lets it fetch, and what the crawler's payment headers come to.
//!
//! The protocol is the one Cloudflare's pay per crawl speaks, so that crawlers that already
//! speak it work unchanged: a priced request without a price header is answered `402 Payment
//! Required` with `crawler-price: USD 0.01`; a request carrying `crawler-exact-price` equal to
//! the price, or `crawler-max-price` at or above it, is forwarded, and the origin's success is
//! answered with `crawler-charged`; anything else gets a `crawler-error` code (the codes and
//! statuses of Cloudflare's table). A price header counts only when the request's Web Bot Auth
//! signature verified and covers it: an unsigned offer could be anyone's, and an uncovered one
//! could have been changed on the way.
//!
//! [`settle`] is the rule; [`Pricing`] is a site's prices with the paths that are always free
//! (its sitemaps; `/robots.txt` is never judged). The judgement ([`crate::judge`]) asks them
//! only for a verified crawler's `GET` that robots.txt allows; the proxy records the charge
//! (`proxy::ledger`).

use crate::agent::Category;
use crate::robots::Robots;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

/// The response header that states a page's price.
pub const CRAWLER_PRICE: &str = "crawler-price";
/// The request header of a crawler that pays exactly the price it was told.
pub const CRAWLER_EXACT_PRICE: &str = "crawler-exact-price";
/// The request header of a crawler that pays any price up to this one.
pub const CRAWLER_MAX_PRICE: &str = "crawler-max-price";
/// The response header that states what a crawler was charged.
pub const CRAWLER_CHARGED: &str = "crawler-charged";
/// The response header that says why a payment was refused.
pub const CRAWLER_ERROR: &str = "crawler-error";

/// How many decimal places a price may have: amounts are kept in millionths, exactly.
pub const MAX_DECIMALS: usize = 6;

/// Millionths in one unit of a currency.
const MICROS: u64 = 1_000_000;

/// The most digits before the point: a price stays far below `u64::MAX` millionths.
const MAX_WHOLE_DIGITS: usize = 12;

/// A price: a currency (ISO 4217's three capital letters) and an amount, exact to
/// [`MAX_DECIMALS`] places. Written `USD 0.01`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Price {
    currency: [u8; 3],
    micros: u64,
}

/// A text that is not a price.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a price: {why} (write a currency code and an amount, such as USD 0.01)")]
pub struct PriceError {
    /// The text as given (bounded).
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Price {
    /// Reads `CUR 1.23`: three capital letters, one space, digits with at most
    /// [`MAX_DECIMALS`] after a point. Spaces and tabs around it are ignored, as HTTP ignores
    /// them around a field value; nothing else is forgiven (no sign, no exponent, no thousands
    /// separator), since a price both sides must read alike.
    pub fn parse(text: &str) -> Result<Price, PriceError> {
        let error = |why| PriceError {
            text: crate::judge::sanitize(text).into_owned(),
            why,
        };
        let trimmed = text.trim_matches([' ', '\t']);
        let Some((currency, amount)) = trimmed.split_once(' ') else {
            return Err(error("no space between the currency and the amount"));
        };
        let currency: [u8; 3] = currency
            .as_bytes()
            .try_into()
            .ok()
            .filter(|c: &[u8; 3]| c.iter().all(u8::is_ascii_uppercase))
            .ok_or_else(|| error("the currency is not three capital letters (ISO 4217)"))?;
        let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) {
            return Err(error("the amount is not a decimal number"));
        }
        if amount.ends_with('.') {
            return Err(error("the amount ends with a point"));
        }
        if whole.len() > MAX_WHOLE_DIGITS {
            return Err(error("the amount is too large"));
        }
        if fraction.len() > MAX_DECIMALS {
            return Err(error("the amount has more than six decimal places"));
        }
        let parse = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| error("the amount is too large"))
        };
        let whole = parse(whole)?;
        let fraction = if fraction.is_empty() {
            0
        } else {
            let pad = u32::try_from(MAX_DECIMALS - fraction.len()).unwrap_or(0);
            parse(fraction)?.saturating_mul(10u64.pow(pad))
        };
        Ok(Price {
            currency,
            micros: whole.saturating_mul(MICROS).saturating_add(fraction),
        })
    }

    /// The currency code.
    pub fn currency(&self) -> &str {
        std::str::from_utf8(&self.currency).unwrap_or("XXX")
    }

    /// The amount in millionths of the currency's unit.
    pub fn micros(&self) -> u64 {
        self.micros
    }

    /// The amount in the currency's unit, for metrics (which sum in floating point).
    pub fn amount(&self) -> f64 {
        self.micros as f64 / MICROS as f64
    }

    /// Whether it costs nothing.
    pub fn is_zero(&self) -> bool {
        self.micros == 0
    }

    /// Whether `offer` pays this price when it is a maximum: the same currency, and no less.
    fn is_covered_by(&self, offer: &Price) -> bool {
        self.currency == offer.currency && offer.micros >= self.micros
    }
}

impl Price {
    /// The amount as a decimal: at least two decimals, and as many more as it needs (`0.01`,
    /// `2.00`, `0.0015`).
    pub fn amount_text(&self) -> String {
        let whole = self.micros / MICROS;
        let fraction = format!("{:06}", self.micros % MICROS);
        let fraction = fraction.trim_end_matches('0');
        format!("{whole}.{fraction:0<2}")
    }
}

impl fmt::Display for Price {
    /// `USD 0.01`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.currency(), self.amount_text())
    }
}

/// A site's prices: per crawler (by lower-cased token or catalog name) and per category; a
/// crawler's own price wins over its category's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prices {
    crawlers: HashMap<String, Price>,
    categories: BTreeMap<Category, Price>,
}

impl Prices {
    /// Prices per crawler (token or catalog name, any case) and per category.
    pub fn new(
        crawlers: impl IntoIterator<Item = (String, Price)>,
        categories: impl IntoIterator<Item = (Category, Price)>,
    ) -> Prices {
        Prices {
            crawlers: crawlers
                .into_iter()
                .map(|(key, price)| (key.to_ascii_lowercase(), price))
                .collect(),
            categories: categories.into_iter().collect(),
        }
    }

    /// Whether nothing is priced.
    pub fn is_empty(&self) -> bool {
        self.crawlers.is_empty() && self.categories.is_empty()
    }

    /// The price for a crawler with this token, name and category, if it has one.
    pub fn for_crawler(&self, token: &str, name: &str, category: Category) -> Option<Price> {
        let own = |key: &str| {
            (!key.is_empty())
                .then(|| self.crawlers.get(&key.to_ascii_lowercase()))
                .flatten()
        };
        own(token)
            .or_else(|| own(name))
            .or_else(|| self.categories.get(&category))
            .copied()
    }
}

/// A site's prices against one robots.txt: the prices, and the paths that are always free
/// because a crawler needs them to find the pages it pays for (the file's sitemaps).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pricing {
    /// The prices.
    pub prices: Prices,
    /// The normalised paths (and queries) of the file's `Sitemap:` lines.
    sitemaps: HashSet<Vec<u8>>,
}

impl Pricing {
    /// The prices, with `robots`'s sitemaps free.
    pub fn new(prices: Prices, robots: &Robots) -> Pricing {
        let sitemaps = robots
            .file()
            .sitemaps
            .iter()
            .map(|sitemap| crate::judge::normalized(&sitemap.url).into_owned())
            .collect();
        Pricing { prices, sitemaps }
    }

    /// Whether a normalised path is free: a sitemap robots.txt names, or one named as sitemaps
    /// are (`sitemap.xml`, `sitemap_index.xml`, `sitemap-posts-2.xml.gz`: a file whose name
    /// starts with `sitemap` and ends in `.xml` or `.xml.gz`), since a sitemap index names files
    /// robots.txt does not.
    pub fn is_free(&self, path: &[u8]) -> bool {
        if self.sitemaps.contains(path) {
            return true;
        }
        let path = path.split(|&b| b == b'?').next().unwrap_or_default();
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
        let lower = name.to_ascii_lowercase();
        lower.starts_with(b"sitemap") && (lower.ends_with(b".xml") || lower.ends_with(b".xml.gz"))
    }
}

/// One price header of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Field<'a> {
    /// Not sent.
    #[default]
    Absent,
    /// Sent once, with this value.
    One(&'a [u8]),
    /// Sent on several lines: which one was meant is not for crawlgate to guess.
    Several,
}

impl<'a> Field<'a> {
    /// The field from the values of one header name.
    pub fn of(mut values: impl Iterator<Item = &'a [u8]>) -> Field<'a> {
        match (values.next(), values.next()) {
            (None, _) => Field::Absent,
            (Some(value), None) => Field::One(value),
            (Some(_), Some(_)) => Field::Several,
        }
    }

    fn is_present(self) -> bool {
        self != Field::Absent
    }
}

/// Which price headers a verified Web Bot Auth signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Covers {
    /// `crawler-exact-price`.
    pub exact: bool,
    /// `crawler-max-price`.
    pub max: bool,
}

/// What a request offers to pay, and what vouches for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer<'a> {
    /// `crawler-exact-price`.
    pub exact: Field<'a>,
    /// `crawler-max-price`.
    pub max: Field<'a>,
    /// The request's Web Bot Auth signature verified (and is not a replay).
    pub signed: bool,
    /// The price headers that signature covers.
    pub covers: Covers,
}

/// Why a payment is refused, as `crawler-error` names it (Cloudflare's codes, so that a
/// crawler that speaks pay per crawl knows what to do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentError {
    /// Both `crawler-exact-price` and `crawler-max-price` (or one of them twice).
    ConflictingPriceHeaders,
    /// A price header that is not a price.
    InvalidCrawlerPriceValue,
    /// A price header without a verified Web Bot Auth signature.
    StrongAuthRequired,
    /// A verified signature that does not cover the price header.
    InvalidSignature,
    /// `crawler-exact-price` is not the price.
    InvalidCrawlerExactPrice,
    /// `crawler-max-price` is below the price (or in another currency).
    InvalidCrawlerMaxPrice,
    /// The charge cannot be recorded now (crawlgate's ledger or the fleet's store): not
    /// charged, try again.
    InternalError,
}

impl PaymentError {
    /// The `crawler-error` value.
    pub fn code(self) -> &'static str {
        match self {
            PaymentError::ConflictingPriceHeaders => "ConflictingPriceHeaders",
            PaymentError::InvalidCrawlerPriceValue => "InvalidCrawlerPriceValue",
            PaymentError::StrongAuthRequired => "StrongAuthRequired",
            PaymentError::InvalidSignature => "InvalidSignature",
            PaymentError::InvalidCrawlerExactPrice => "InvalidCrawlerExactPrice",
            PaymentError::InvalidCrawlerMaxPrice => "InvalidCrawlerMaxPrice",
            PaymentError::InternalError => "InternalError",
        }
    }

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            PaymentError::ConflictingPriceHeaders => "conflicting_price_headers",
            PaymentError::InvalidCrawlerPriceValue => "invalid_price_value",
            PaymentError::StrongAuthRequired => "strong_auth_required",
            PaymentError::InvalidSignature => "invalid_signature",
            PaymentError::InvalidCrawlerExactPrice => "invalid_exact_price",
            PaymentError::InvalidCrawlerMaxPrice => "invalid_max_price",
            PaymentError::InternalError => "internal_error",
        }
    }

    /// The status of the answer: 400 for a request that cannot be a payment as sent, 402 for
    /// one whose price is not the site's, 503 for one crawlgate cannot record now.
    pub fn status(self) -> u16 {
        match self {
            PaymentError::ConflictingPriceHeaders
            | PaymentError::InvalidCrawlerPriceValue
            | PaymentError::StrongAuthRequired
            | PaymentError::InvalidSignature => 400,
            PaymentError::InvalidCrawlerExactPrice | PaymentError::InvalidCrawlerMaxPrice => 402,
            PaymentError::InternalError => 503,
        }
    }

    /// What the crawler should do, for the body.
    pub fn why(self) -> &'static str {
        match self {
            PaymentError::ConflictingPriceHeaders => {
                "send one price header, once: crawler-exact-price or crawler-max-price"
            }
            PaymentError::InvalidCrawlerPriceValue => {
                "the price header is not a price: write a currency code and an amount, such as USD 0.01"
            }
            PaymentError::StrongAuthRequired => {
                "a price header counts only in a request whose Web Bot Auth signature verifies"
            }
            PaymentError::InvalidSignature => {
                "the request's Web Bot Auth signature does not cover its price header: add it to the covered components"
            }
            PaymentError::InvalidCrawlerExactPrice => {
                "crawler-exact-price is not the price: send the crawler-price value"
            }
            PaymentError::InvalidCrawlerMaxPrice => {
                "crawler-max-price is below the price (or in another currency)"
            }
            PaymentError::InternalError => {
                "the charge cannot be recorded right now; nothing was charged, try again later"
            }
        }
    }
}

/// What a priced request comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payment {
    /// No price header: `402` with the price.
    Quoted(Price),
    /// The crawler pays the price: forwarded, and charged when the origin answers with
    /// success.
    Agreed(Price),
    /// Refused, and why (with the price).
    Refused(Price, PaymentError),
}

impl Payment {
    /// The page's price.
    pub fn price(self) -> Price {
        match self {
            Payment::Quoted(price) | Payment::Agreed(price) | Payment::Refused(price, _) => price,
        }
    }

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Payment::Quoted(_) => "quoted",
            Payment::Agreed(_) => "agreed",
            Payment::Refused(_, error) => error.label(),
        }
    }
}

/// What a request's offer comes to against the page's price: the one header sent, read as a
/// price, vouched for by a verified signature that covers it, and enough.
pub fn settle(price: Price, offer: &Offer<'_>) -> Payment {
    let refused = |error| Payment::Refused(price, error);
    let (value, exact, covered) = match (offer.exact, offer.max) {
        (Field::Absent, Field::Absent) => return Payment::Quoted(price),
        (exact, max) if exact.is_present() && max.is_present() => {
            return refused(PaymentError::ConflictingPriceHeaders)
        }
        (Field::Several, _) | (_, Field::Several) => {
            return refused(PaymentError::ConflictingPriceHeaders)
        }
        (Field::One(value), _) => (value, true, offer.covers.exact),
        (_, Field::One(value)) => (value, false, offer.covers.max),
    };
    let Some(offered) = std::str::from_utf8(value)
        .ok()
        .and_then(|text| Price::parse(text).ok())
    else {
        return refused(PaymentError::InvalidCrawlerPriceValue);
    };
    if !offer.signed {
        return refused(PaymentError::StrongAuthRequired);
    }
    if !covered {
        return refused(PaymentError::InvalidSignature);
    }
    match exact {
        true if offered == price => Payment::Agreed(price),
        true => refused(PaymentError::InvalidCrawlerExactPrice),
        false if price.is_covered_by(&offered) => Payment::Agreed(price),
        false => refused(PaymentError::InvalidCrawlerMaxPrice),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(text: &str) -> Price {
        Price::parse(text).unwrap()
    }

    #[test]
    fn prices_are_read_exactly_and_written_back_alike() {
        assert_eq!(price("USD 0.01").micros(), 10_000);
        assert_eq!(price(" USD 0.010\t").micros(), 10_000);
        assert_eq!(price("EUR 2").micros(), 2_000_000);
        assert_eq!(price("USD 0.000001").micros(), 1);
        assert_eq!(price("USD 0.01").to_string(), "USD 0.01");
        assert_eq!(price("USD 0.0015").to_string(), "USD 0.0015");
        assert_eq!(price("EUR 2").to_string(), "EUR 2.00");
        assert_eq!(
            price("JPY 999999999999.999999").to_string(),
            "JPY 999999999999.999999"
        );
        assert_eq!(price("USD 0.01"), price("USD 0.010000"));
        assert_ne!(price("USD 0.01"), price("EUR 0.01"));
        for bad in [
            "",
            "USD",
            "0.01",
            "usd 0.01",
            "US 0.01",
            "USDX 0.01",
            "USD  0.01",
            "USD -0.01",
            "USD +1",
            "USD 1e3",
            "USD 1,000",
            "USD .5",
            "USD 1.",
            "USD 0.0000001",
            "USD 9999999999999",
            "USD 0.01 extra",
            "USD\t0.01",
            "€ 1",
        ] {
            assert!(Price::parse(bad).is_err(), "{bad}");
        }
        let error = Price::parse("usd 1").unwrap_err().to_string();
        assert!(error.contains("three capital letters"), "{error}");
    }

    #[test]
    fn a_crawlers_own_price_wins_over_its_categorys() {
        let prices = Prices::new(
            [("GPTBot".to_owned(), price("USD 0.05"))],
            [(Category::AiTraining, price("USD 0.01"))],
        );
        let training = Category::AiTraining;
        assert_eq!(
            prices.for_crawler("gptbot", "GPTBot", training),
            Some(price("USD 0.05"))
        );
        assert_eq!(
            prices.for_crawler("CCBot", "CCBot", training),
            Some(price("USD 0.01"))
        );
        assert_eq!(
            prices.for_crawler("Googlebot", "Googlebot", Category::Search),
            None
        );
        // The unnamed row has no token: no crawler's price reaches it by an empty key.
        let empty = Prices::new([(String::new(), price("USD 1"))], []);
        assert_eq!(empty.for_crawler("", "unnamed", Category::Unnamed), None);
    }

    fn offer<'a>(exact: Field<'a>, max: Field<'a>, signed: bool, covers: Covers) -> Offer<'a> {
        Offer {
            exact,
            max,
            signed,
            covers,
        }
    }

    const BOTH: Covers = Covers {
        exact: true,
        max: true,
    };

    #[test]
    fn an_offer_is_settled_as_cloudflares_pay_per_crawl_settles_it() {
        use Field::*;
        use PaymentError::*;
        let p = price("USD 0.01");
        let settle = |o: Offer| settle(p, &o);
        assert_eq!(settle(Offer::default()), Payment::Quoted(p));
        // A price header counts only when a verified signature covers it.
        assert_eq!(
            settle(offer(One(b"USD 0.01"), Absent, true, BOTH)),
            Payment::Agreed(p)
        );
        assert_eq!(
            settle(offer(One(b"USD 0.010"), Absent, true, BOTH)),
            Payment::Agreed(p)
        );
        assert_eq!(
            settle(offer(Absent, One(b"USD 0.02"), true, BOTH)),
            Payment::Agreed(p)
        );
        assert_eq!(
            settle(offer(Absent, One(b"USD 0.01"), true, BOTH)),
            Payment::Agreed(p)
        );
        let refused = |error| Payment::Refused(p, error);
        assert_eq!(
            settle(offer(Absent, One(b"USD 0.009"), true, BOTH)),
            refused(InvalidCrawlerMaxPrice)
        );
        assert_eq!(
            settle(offer(Absent, One(b"EUR 5"), true, BOTH)),
            refused(InvalidCrawlerMaxPrice)
        );
        assert_eq!(
            settle(offer(One(b"USD 0.02"), Absent, true, BOTH)),
            refused(InvalidCrawlerExactPrice)
        );
        assert_eq!(
            settle(offer(One(b"USD 0.01"), Absent, false, Covers::default())),
            refused(StrongAuthRequired)
        );
        let max_only = Covers {
            exact: false,
            max: true,
        };
        assert_eq!(
            settle(offer(One(b"USD 0.01"), Absent, true, max_only)),
            refused(InvalidSignature)
        );
        assert_eq!(
            settle(offer(Absent, One(b"USD 0.01"), true, max_only)),
            Payment::Agreed(p)
        );
        assert_eq!(
            settle(offer(One(b"USD 0.01"), One(b"USD 0.01"), true, BOTH)),
            refused(ConflictingPriceHeaders)
        );
        assert_eq!(
            settle(offer(Several, Absent, true, BOTH)),
            refused(ConflictingPriceHeaders)
        );
        for bad in [&b"0.01"[..], b"USD", b"USD 0,01", b"\xff\xfe"] {
            assert_eq!(
                settle(offer(One(bad), Absent, true, BOTH)),
                refused(InvalidCrawlerPriceValue)
            );
        }
        // Statuses are Cloudflare's.
        assert_eq!(ConflictingPriceHeaders.status(), 400);
        assert_eq!(InvalidCrawlerMaxPrice.status(), 402);
        assert_eq!(InvalidCrawlerMaxPrice.code(), "InvalidCrawlerMaxPrice");
    }

    #[test]
    fn sitemaps_are_free() {
        let robots = Robots::parse(
            b"User-agent: *\nDisallow:\nSitemap: https://example.com/maps/Index.XML?v=2\nSitemap: /news.txt\n",
        );
        let pricing = Pricing::new(Prices::default(), &robots);
        let free = |path: &str| pricing.is_free(&crate::judge::normalized(path));
        assert!(free("/maps/Index.XML?v=2"));
        assert!(free("/news.txt"));
        assert!(!free("/maps/Index.XML"));
        assert!(free("/sitemap.xml"));
        assert!(free("/blog/sitemap_index.xml?page=3"));
        assert!(free("/Sitemap-posts-2.xml.gz"));
        assert!(!free("/sitemap.html"));
        assert!(!free("/articles/sitemap"));
        assert!(!free("/sitemap.xml/page"));
        assert!(!free("/page"));
    }
}
