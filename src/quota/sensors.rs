//! Measured rates and throttle times, as Kafka's metrics library computes
//! them (`SampledStat`, `Rate`, `QuotaUtils.throttleTime`).
//!
//! Clients that share a quota share one sensor, and connections of one
//! client may sit on any core. So each sensor lives on one shard, chosen by
//! a hash of its id; the connection's shard sends it what to record (a
//! message, or a direct call when it is the owner) and gets the throttle
//! time back. Nothing here is shared between cores.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kafka_protocol::protocol::StrBytes;

use super::{QuotaKey, SensorId};
use crate::shard::messages::{ShardReply, ShardRequest};
use crate::shard::Shard;

/// Kafka's `quota.window.num` default: samples a rate is measured over
/// (also `controller.quota.window.num`'s, for the mutation bucket).
pub const WINDOW_SAMPLES: u64 = 11;
/// Kafka's `quota.window.size.seconds` default, in ms (also
/// `controller.quota.window.size.seconds`').
pub const WINDOW_MS: u64 = 1000;

/// The windows client rates are measured over: `quota.window.num` samples
/// of `quota.window.size.seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWindow {
    /// `quota.window.num`.
    pub samples: u64,
    /// `quota.window.size.seconds`, in ms.
    pub window_ms: u64,
}

impl QuotaWindow {
    /// Kafka's defaults: 11 samples of 1 s.
    pub const KAFKA: QuotaWindow = QuotaWindow {
        samples: WINDOW_SAMPLES,
        window_ms: WINDOW_MS,
    };

    /// The least span a rate is measured over: all samples but one.
    pub fn span_ms(self) -> u64 {
        (self.samples - 1) * self.window_ms
    }
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow::KAFKA
    }
}
/// Kafka forgets a sensor idle this long (`ClientQuotaManager.InactiveSensorExpirationTimeSeconds`).
const SENSOR_IDLE_EXPIRY_MS: u64 = 3_600_000;
/// Most sensors one shard keeps; past it the idlest are forgotten (Kafka
/// has no bound; a client choosing a new client id per request would
/// otherwise grow this map without end).
const SENSORS_PER_SHARD_MAX: usize = 100_000;

/// Milliseconds on a clock every core shares (monotonic, from the first
/// call in the process).
pub fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    start_ms: u64,
    last_event_ms: u64,
}

impl Sample {
    fn new(now: u64) -> Self {
        Sample {
            value: 0.0,
            start_ms: now,
            last_event_ms: now,
        }
    }
}

/// A rate per second over `samples` windows of `window_ms` (Kafka's
/// defaults: 11 of 1 s), as Kafka's `Rate` of a `WindowedSum`: samples
/// start when the first value after the last one completed arrives; a
/// rate's window is never taken as shorter than `samples - 1` windows, so
/// one large value on an idle sensor is spread over ten seconds.
#[derive(Debug, Clone, Default)]
pub struct Rate {
    /// At most `window.samples + 1` (Kafka keeps one overlapping sample).
    samples: Vec<Sample>,
    current: usize,
    window: QuotaWindow,
}

impl Rate {
    /// A rate over `window`.
    pub fn new(window: QuotaWindow) -> Self {
        Rate {
            window,
            ..Rate::default()
        }
    }

    /// Adds `value` at `now`.
    pub fn record(&mut self, value: f64, now: u64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
        }
        if now.saturating_sub(self.samples[self.current].start_ms) >= self.window.window_ms {
            self.current = (self.current + 1) % (self.window.samples as usize + 1);
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now));
            } else {
                self.samples[self.current] = Sample::new(now);
            }
        }
        let sample = &mut self.samples[self.current];
        sample.value += value;
        sample.last_event_ms = now;
    }

    fn purge(&mut self, now: u64) {
        let expiry = self.window.samples * self.window.window_ms;
        for sample in &mut self.samples {
            if now.saturating_sub(sample.last_event_ms) >= expiry {
                *sample = Sample::new(now);
            }
        }
    }

    /// The span the rate is measured over at `now`, in ms (Kafka's
    /// `Rate.windowSize`).
    pub fn window_ms(&mut self, now: u64) -> u64 {
        self.purge(now);
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now);
        let mut elapsed = now.saturating_sub(oldest);
        let full = elapsed / self.window.window_ms;
        if full < self.window.samples - 1 {
            elapsed += (self.window.samples - 1 - full) * self.window.window_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now`.
    pub fn measure(&mut self, now: u64) -> f64 {
        let window = self.window_ms(now);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (window as f64 / 1000.0)
    }

    /// Records `value` and returns the throttle Kafka's `ClientQuotaManager`
    /// answers: 0 within `quota`, else `(rate - quota) / quota * window`,
    /// rounded, without bound.
    pub fn record_and_throttle(&mut self, value: f64, quota: f64, now: u64) -> u64 {
        self.record(value, now);
        let rate = self.measure(now);
        if rate <= quota {
            return 0;
        }
        let throttle = (rate - quota) / quota * self.window_ms(now) as f64;
        // NaN (a NaN quota) gives 0, as Java's cast does.
        (throttle.round() as u64).min(THROTTLE_MS_MAX)
    }
}

/// The longest throttle: what a response's `throttle_time_ms` can say
/// (a tiny quota could otherwise ask for years).
const THROTTLE_MS_MAX: u64 = i32::MAX as u64;

/// Makes room in a full table: forgets the eighth of `map` that `keep`
/// ranks lowest, in one pass, so a run of new entries costs amortised
/// constant time.
fn evict_eighth<V>(map: &mut HashMap<u64, V>, keep: impl Fn(&V) -> f64) {
    let mut ranked: Vec<(f64, u64)> = map.iter().map(|(id, v)| (keep(v), *id)).collect();
    let cut = ranked.len() / 8;
    if cut == 0 {
        return;
    }
    ranked.select_nth_unstable_by(cut, |a, b| a.0.total_cmp(&b.0));
    for (_, id) in &ranked[..cut] {
        map.remove(id);
    }
}

/// The sensors one shard owns, by a hash of their id (a client id may be
/// 32 kB long; the table holds only its hash).
#[derive(Default)]
pub struct SensorTable {
    hasher: std::collections::hash_map::RandomState,
    sensors: RefCell<HashMap<u64, (Rate, u64)>>,
    window: QuotaWindow,
}

impl SensorTable {
    /// Sensors measuring over `window`.
    pub fn new(window: QuotaWindow) -> Self {
        SensorTable {
            window,
            ..SensorTable::default()
        }
    }

    /// Records `value` on `sensor`, whose quota is `quota`, and returns the
    /// throttle in ms; the value stays recorded as `kept` says.
    pub fn record(&self, sensor: SensorId, value: f64, quota: f64, kept: Kept) -> u64 {
        let now = now_ms();
        let id = std::hash::BuildHasher::hash_one(&self.hasher, &sensor);
        let mut sensors = self.sensors.borrow_mut();
        if sensors.len() >= SENSORS_PER_SHARD_MAX && !sensors.contains_key(&id) {
            sensors.retain(|_, (_, last)| now.saturating_sub(*last) < SENSOR_IDLE_EXPIRY_MS);
            if sensors.len() >= SENSORS_PER_SHARD_MAX {
                // The idlest go first.
                evict_eighth(&mut sensors, |(_, last)| *last as f64);
            }
        }
        let (rate, last) = sensors
            .entry(id)
            .or_insert_with(|| (Rate::new(self.window), now));
        if now.saturating_sub(*last) >= SENSOR_IDLE_EXPIRY_MS {
            *rate = Rate::new(self.window);
        }
        *last = now;
        let throttle = rate.record_and_throttle(value, quota, now);
        let taken_back = match kept {
            Kept::Always => false,
            Kept::UnlessThrottled => throttle > 0,
            Kept::Never => true,
        };
        if taken_back {
            rate.record(-value, now);
        }
        throttle
    }

    /// Number of sensors held.
    pub fn len(&self) -> usize {
        self.sensors.borrow().len()
    }

    /// True when no sensor is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The shard that owns `sensor`.
pub fn owner(sensor: &SensorId, nr_shards: usize) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    sensor.key.hash(&mut hasher);
    sensor.user.hash(&mut hasher);
    sensor.client_id.hash(&mut hasher);
    (hasher.finish() % nr_shards as u64) as usize
}

/// What becomes of a value recorded on a sensor once its throttle is
/// known (Kafka's `unrecordQuotaSensor` takes one back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// It stays recorded (a produce, a request's handling time).
    Always,
    /// It is taken back when it throttles (a fetch, whose throttled answer
    /// carries no data; a refused connection).
    UnlessThrottled,
    /// It is taken back whatever the throttle: it only measures one (a
    /// fetch that another quota already throttles answers no data).
    Never,
}

/// Records `value` on `sensor` on the shard that owns it (directly when
/// that is this shard) and returns the throttle time in ms; 0 when the
/// owner cannot be reached.
async fn record_on_owner(
    shard: &Rc<Shard>,
    sensor: SensorId,
    value: f64,
    quota: f64,
    kept: Kept,
) -> u64 {
    let target = owner(&sensor, shard.nr_shards);
    if target == shard.id {
        return shard.quota_sensors.record(sensor, value, quota, kept);
    }
    let request = ShardRequest::RecordQuota {
        sensor,
        value,
        quota,
        kept,
    };
    match shard.call(target, request).await {
        Ok(reply) => match reply.await {
            Ok(ShardReply::Throttle(ms)) => ms,
            _ => 0,
        },
        Err(_) => 0,
    }
}

/// How long a new connection from `ip` must be held before it is closed
/// unread, as Kafka's `ConnectionQuotas` does past the IP's
/// `connection_creation_rate` (`rate`, found by the owner shard when it
/// admitted the connection): 0 to serve it. A refused connection is not
/// counted; the throttle is at most one window.
pub async fn connection_throttle(
    shard: &Rc<Shard>,
    ip: std::net::IpAddr,
    rate: Option<f64>,
) -> u64 {
    let Some(rate) = rate else {
        return 0;
    };
    let sensor = SensorId {
        key: QuotaKey::ConnectionCreationRate,
        user: String::new(),
        client_id: ip.to_canonical().to_string(),
    };
    record_on_owner(shard, sensor, 1.0, rate, Kept::UnlessThrottled)
        .await
        .min(shard.config.quota_window.window_ms)
}

/// What a connection knows for quotas: its user (the principal's name),
/// until when it stays muted after a throttled response, and the
/// `request_percentage` quota last found for it.
#[derive(Clone)]
pub struct Client {
    user: Rc<str>,
    muted_until: Rc<Cell<Option<Instant>>>,
    request_quota: Rc<RefCell<Option<FoundQuota>>>,
}

/// The quota that applied to a connection's requests with one client id
/// under one metadata image (held weakly: the cache keeps no old image
/// alive), so requests under the same ones need no look-up.
struct FoundQuota {
    image: std::rc::Weak<crate::cluster::image::MetadataImage>,
    client_id: Option<StrBytes>,
    quota: Option<(SensorId, f64)>,
}

impl Client {
    /// The client of a connection whose principal's name is `user`
    /// (`ANONYMOUS` on a PLAINTEXT listener).
    pub fn new(user: &str) -> Self {
        Client {
            user: user.into(),
            muted_until: Rc::default(),
            request_quota: Rc::default(),
        }
    }

    /// The `request_percentage` quota under `image` of this client's
    /// requests with `client_id`.
    fn request_quota(
        &self,
        image: &Rc<crate::cluster::image::MetadataImage>,
        client_id: Option<&StrBytes>,
    ) -> Option<(SensorId, f64)> {
        let mut found = self.request_quota.borrow_mut();
        if let Some(found) = found.as_ref() {
            if found.image.ptr_eq(&Rc::downgrade(image)) && found.client_id.as_ref() == client_id {
                return found.quota.clone();
            }
        }
        let quota = image.client_quotas.resolve(
            QuotaKey::RequestPercentage,
            &self.user,
            client_id.map_or("", |id| id.as_str()),
        );
        *found = Some(FoundQuota {
            image: Rc::downgrade(image),
            client_id: client_id.cloned(),
            quota: quota.clone(),
        });
        quota
    }

    /// This client for one request, whose header gave `client_id` (null
    /// counts as empty).
    pub fn for_request(&self, client_id: Option<&StrBytes>) -> RequestClient {
        RequestClient {
            client: self.clone(),
            client_id: client_id.cloned(),
            meter: None,
        }
    }
}

/// A connection's client for one request: whose quotas apply to it.
#[derive(Clone)]
pub struct RequestClient {
    client: Client,
    /// Shares the request header's bytes (no copy per request).
    client_id: Option<StrBytes>,
    /// The request's handling time, measured while some
    /// `request_percentage` quota exists (see [`RequestClient::metered`]).
    meter: Option<Rc<RequestMeter>>,
}

/// Kafka's `NANOS_TO_PERCENTAGE_PER_SECOND`: a request's handling time in
/// the unit of `request_percentage` (percent of one thread over a second).
const NANOS_TO_PERCENTAGE: f64 = 100.0 / 1e9;

/// The time one request has spent being handled on its connection's
/// core: the sum of the time its handler's futures spent in `poll`, as
/// Kafka counts a request handler thread's time on the request (waits in
/// between, for the disk or a long-polling fetch, are not counted, as a
/// request parked in Kafka's purgatory holds no thread). Work another core
/// does for the request is not counted either; work on partitions of this
/// core is, so a request costs its client a little more when its
/// partitions live on the core its connection landed on.
#[derive(Debug)]
pub struct RequestMeter {
    /// The quota charged, and its sensor.
    quota: (SensorId, f64),
    spent: Cell<Duration>,
    /// When the poll under way began.
    polling_since: Cell<Option<Instant>>,
    /// True once the time was charged (or found exempt): it is charged
    /// once, by whichever comes first, the handler or the connection.
    settled: Cell<bool>,
}

impl RequestMeter {
    /// Time spent so far, the poll under way included.
    fn spent(&self) -> Duration {
        let running = self
            .polling_since
            .get()
            .map_or(Duration::ZERO, |since| since.elapsed());
        self.spent.get() + running
    }

    /// Runs `future`, adding the time spent polling it to this meter.
    pub fn time<F: std::future::Future>(self: &Rc<Self>, future: F) -> Metered<F> {
        Metered {
            future: Box::pin(future),
            meter: Rc::clone(self),
        }
    }
}

/// A future whose polls are timed by a [`RequestMeter`].
pub struct Metered<F> {
    future: std::pin::Pin<Box<F>>,
    meter: Rc<RequestMeter>,
}

impl<F: std::future::Future> std::future::Future for Metered<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let started = Instant::now();
        self.meter.polling_since.set(Some(started));
        let polled = self.future.as_mut().poll(cx);
        self.meter.polling_since.set(None);
        let spent = self.meter.spent.get() + started.elapsed();
        self.meter.spent.set(spent);
        polled
    }
}

impl RequestClient {
    /// The quota of `key` that applies to this request, if any.
    pub fn quota(&self, shard: &Shard, key: QuotaKey) -> Option<(SensorId, f64)> {
        let image = shard.image();
        image.client_quotas.resolve(
            key,
            &self.client.user,
            self.client_id.as_deref().unwrap_or(""),
        )
    }

    /// The controller mutation quota that applies to this request, for
    /// the controller to apply, strictly or not.
    pub fn mutation_quota(&self, shard: &Shard, strict: bool) -> Option<MutationQuota> {
        let (sensor, rate) = self.quota(shard, QuotaKey::ControllerMutationRate)?;
        Some(MutationQuota {
            sensor,
            rate,
            strict,
        })
    }

    /// This request with its handling time measured when a
    /// `request_percentage` quota applies to it (one look at the image
    /// when no such quota exists; the connection remembers the answer for
    /// its client id and the image otherwise).
    pub fn metered(mut self, shard: &Shard) -> Self {
        let image = shard.image();
        if !image.client_quotas.any(QuotaKey::RequestPercentage) {
            return self;
        }
        if let Some(quota) = self.client.request_quota(&image, self.client_id.as_ref()) {
            self.meter = Some(Rc::new(RequestMeter {
                quota,
                spent: Cell::default(),
                polling_since: Cell::default(),
                settled: Cell::default(),
            }));
        }
        self
    }

    /// The meter timing this request, when it is measured.
    pub fn meter(&self) -> Option<&Rc<RequestMeter>> {
        self.meter.as_ref()
    }

    /// Charges the request's handling time so far to the
    /// `request_percentage` quota that applied to it when it arrived, as Kafka's
    /// `ClientRequestQuotaManager` does when it answers, and returns the
    /// throttle in ms: at most one quota window
    /// (`quota.window.size.seconds`), 0 without a quota. A throttle mutes
    /// the connection. Only the first call charges.
    pub async fn charge_request_time(&self, shard: &Rc<Shard>) -> u64 {
        let Some(meter) = &self.meter else {
            return 0;
        };
        if meter.settled.replace(true) {
            return 0;
        }
        let (sensor, quota) = meter.quota.clone();
        let value = meter.spent().as_nanos() as f64 * NANOS_TO_PERCENTAGE;
        let throttle = record_on_owner(shard, sensor, value, quota, Kept::Always)
            .await
            .min(shard.config.quota_window.window_ms);
        self.client.mute_for(throttle);
        throttle
    }

    /// Marks the request exempt from the `request_percentage` quota (a
    /// replica's fetch, as in Kafka): its time is not charged.
    pub fn exempt_request_time(&self) {
        if let Some(meter) = &self.meter {
            meter.settled.set(true);
        }
    }

    /// Mutes the connection for a throttle the controller asked for and
    /// returns it for the response's `throttle_time_ms`.
    pub fn throttle(&self, ms: u64) -> i32 {
        self.client.mute_for(ms);
        i32::try_from(ms).unwrap_or(i32::MAX)
    }

    /// Records `value` against the quota of `key` that applies to this
    /// request, kept as `kept` says, and returns the throttle time in ms
    /// (0, without any work, when no quota applies). A throttle mutes the
    /// connection: it reads no further request until the time has passed.
    pub async fn charge(&self, shard: &Rc<Shard>, key: QuotaKey, value: f64, kept: Kept) -> u64 {
        let Some((sensor, quota)) = self.quota(shard, key) else {
            return 0;
        };
        let throttle = record_on_owner(shard, sensor, value, quota, kept).await;
        self.client.mute_for(throttle);
        throttle
    }
}

impl Client {
    /// Reads no request for `ms` from now (a later end is kept).
    pub fn mute_for(&self, ms: u64) {
        if ms == 0 {
            return;
        }
        // A millisecond more than said: a throttle is rounded to the
        // millisecond, and a request read a hair early would find its
        // quota still spent.
        let until = Instant::now() + Duration::from_millis(ms.saturating_add(1));
        if self.muted_until.get().map_or(true, |t| t < until) {
            self.muted_until.set(Some(until));
        }
    }

    /// What is left of a throttle, to wait out before the next request is
    /// read (taken: asked once).
    pub fn take_mute(&self) -> Option<Duration> {
        let until = self.muted_until.take()?;
        until.checked_duration_since(Instant::now())
    }
}

/// A request's `controller_mutation_rate` quota, as the controller is
/// asked to apply it: the sensor, its rate (partitions a second) and
/// whether a topic past it is refused (strict: CreateTopics v6+,
/// DeleteTopics v5+, CreatePartitions v3+) or only throttled.
#[derive(Debug, Clone)]
pub struct MutationQuota {
    /// The sensor.
    pub sensor: SensorId,
    /// Partitions a second.
    pub rate: f64,
    /// Refuse what comes past it (else only throttle).
    pub strict: bool,
}

/// Kafka's `TokenBucket`: `rate` tokens a second, at most a burst of
/// `WINDOW_SAMPLES` windows' worth; a use may drive it below zero.
#[derive(Debug, Clone, Copy)]
struct TokenBucket {
    tokens: f64,
    last_ms: u64,
    /// The rate at the last use.
    rate: f64,
}

impl TokenBucket {
    fn burst(rate: f64) -> f64 {
        (WINDOW_SAMPLES * WINDOW_MS) as f64 / 1000.0 * rate
    }

    /// Tokens at `now`, below the burst: how far from a new (full) bucket.
    fn debt(&self, now: u64) -> f64 {
        let elapsed = now.saturating_sub(self.last_ms) as f64 / 1000.0;
        Self::burst(self.rate) - (self.tokens + self.rate * elapsed)
    }

    fn refill(&mut self, rate: f64, now: u64) {
        let elapsed = now.saturating_sub(self.last_ms) as f64 / 1000.0;
        self.tokens = Self::burst(rate).min(self.tokens + rate * elapsed);
        self.last_ms = now;
        self.rate = rate;
    }
}

/// The controller's token buckets (on the controller's shard only), by a
/// hash of their sensor's id.
#[derive(Default)]
pub struct MutationBuckets {
    hasher: std::collections::hash_map::RandomState,
    buckets: RefCell<HashMap<u64, TokenBucket>>,
}

impl MutationBuckets {
    /// Counts `permits` partitions against `quota` and answers whether they
    /// may go ahead, and the throttle time a violation asks for (0 when
    /// none), as Kafka's Strict/PermissiveControllerMutationQuota: strict
    /// refuses once the bucket is below zero (checked before counting, so
    /// one large request may take it far below); permissive always counts.
    fn record(&self, quota: &MutationQuota, permits: f64, now: u64) -> (bool, u64) {
        let id = std::hash::BuildHasher::hash_one(&self.hasher, &quota.sensor);
        let mut buckets = self.buckets.borrow_mut();
        if buckets.len() >= SENSORS_PER_SHARD_MAX && !buckets.contains_key(&id) {
            // A bucket full again is as good as a new one; past those, the
            // fullest go first (forgiving the least debt).
            buckets.retain(|_, b| b.debt(now) > 0.0);
            if buckets.len() >= SENSORS_PER_SHARD_MAX {
                evict_eighth(&mut buckets, |b| -b.debt(now));
            }
        }
        // A new bucket starts full (Kafka's starts empty at time 0, which
        // its first refill fills).
        let bucket = buckets.entry(id).or_insert(TokenBucket {
            tokens: f64::INFINITY,
            last_ms: now,
            rate: quota.rate,
        });
        bucket.refill(quota.rate, now);
        let throttle = |tokens: f64| {
            ((-tokens / quota.rate * 1000.0).round().max(0.0) as u64).min(THROTTLE_MS_MAX)
        };
        if quota.strict && bucket.tokens < 0.0 {
            return (false, throttle(bucket.tokens));
        }
        bucket.tokens -= permits;
        // Strict counts without checking: only a refusal throttles.
        let violated = !quota.strict && bucket.tokens < 0.0;
        (true, if violated { throttle(bucket.tokens) } else { 0 })
    }
}

/// One request's use of its controller mutation quota.
pub struct MutationCharge<'a> {
    buckets: &'a MutationBuckets,
    quota: Option<MutationQuota>,
    /// (throttle, when) of the last violation.
    last_violation: Option<(u64, u64)>,
}

impl<'a> MutationCharge<'a> {
    /// The charge of a request under `quota` (None: no quota applies).
    pub fn new(buckets: &'a MutationBuckets, quota: Option<MutationQuota>) -> Self {
        MutationCharge {
            buckets,
            quota,
            last_violation: None,
        }
    }

    /// Counts `partitions` created or deleted. False: refused (strict and
    /// over the quota: THROTTLING_QUOTA_EXCEEDED), nothing counted.
    pub fn record(&mut self, partitions: usize) -> bool {
        let Some(quota) = &self.quota else {
            return true;
        };
        let now = now_ms();
        let (allowed, throttle) = self.buckets.record(quota, partitions as f64, now);
        if throttle > 0 {
            self.last_violation = Some((throttle, now));
        }
        allowed
    }

    /// The throttle time the response carries: the last violation's, less
    /// the time since it (Kafka's `ControllerMutationQuota.throttleTime`).
    pub fn throttle_ms(&self) -> u64 {
        self.last_violation.map_or(0, |(throttle, at)| {
            throttle.saturating_sub(now_ms().saturating_sub(at))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: a rate is measured over at least ten windows, as Kafka's, so
    /// the throttle of one large value on an idle sensor is Kafka's.
    #[test]
    fn a_first_value_is_spread_over_ten_windows() {
        let mut rate = Rate::default();
        // 15 MB at 1 MB/s on an idle sensor: 1.5 MB/s over 10 s, 5 s of
        // throttle (Kafka's own example).
        assert_eq!(rate.record_and_throttle(15e6, 1e6, 0), 5000);
        let mut rate = Rate::default();
        assert_eq!(rate.record_and_throttle(10e6, 1e6, 0), 0);
        assert_eq!(rate.record_and_throttle(1.0, 1e6, 0), 0);
        assert_eq!(rate.record_and_throttle(1e6, 1e6, 0), 1000);
    }

    /// Goal: samples roll over and age out as Kafka's do.
    #[test]
    fn samples_roll_and_expire() {
        let mut rate = Rate::default();
        for second in 0..30 {
            rate.record(1000.0, second * 1000);
        }
        // Twelve samples kept; the rate settles at 1000/s.
        let measured = rate.measure(29_500);
        assert!((measured - 1000.0).abs() < 100.0, "{measured}");
        // Idle past 11 windows: everything is forgotten.
        assert_eq!(rate.measure(29_000 + 11_000), 0.0);
        assert_eq!(rate.window_ms(100_000), 10_000);
    }

    /// Goal: the mutation quota is Kafka's token bucket: a burst of eleven
    /// seconds' worth, strict requests refused once below zero, permissive
    /// ones counted and throttled.
    #[test]
    fn mutation_quotas_are_token_buckets() {
        let buckets = MutationBuckets::default();
        let quota = |strict| MutationQuota {
            sensor: SensorId {
                key: QuotaKey::ControllerMutationRate,
                user: "".into(),
                client_id: "c".into(),
            },
            rate: 2.0,
            strict,
        };
        // 22 tokens: one request of 30 is allowed (checked before, without
        // a throttle), and leaves the bucket at -8: the next is refused,
        // with a throttle of 4 s.
        assert_eq!(buckets.record(&quota(true), 30.0, 0), (true, 0));
        assert_eq!(buckets.record(&quota(true), 1.0, 0), (false, 4000));
        // Two seconds refill 4 tokens: -4, still refused, 2 s.
        assert_eq!(buckets.record(&quota(true), 1.0, 2000), (false, 2000));
        // Permissive requests are counted anyway.
        assert_eq!(buckets.record(&quota(false), 2.0, 2000), (true, 3000));
        assert_eq!(buckets.record(&quota(true), 1.0, 5000), (true, 0));
    }

    /// Goal: a sensor table stays within its bound however many clients
    /// come, forgetting the idlest.
    #[test]
    fn sensor_tables_are_bounded() {
        let table = SensorTable::default();
        for n in 0..SENSORS_PER_SHARD_MAX + 10 {
            let sensor = SensorId {
                key: QuotaKey::ProducerByteRate,
                user: String::new(),
                client_id: format!("client-{n}"),
            };
            table.record(sensor, 1.0, 1e9, Kept::Always);
        }
        assert!(table.len() <= SENSORS_PER_SHARD_MAX);
        assert!(table.len() >= SENSORS_PER_SHARD_MAX * 7 / 8);
    }

    /// Goal: a fetch's throttled bytes are taken back, and bytes only
    /// measured are taken back whatever their throttle; a quota's sensors
    /// are found on a fixed shard.
    #[test]
    fn throttled_fetch_bytes_are_taken_back() {
        let table = SensorTable::default();
        let sensor = SensorId {
            key: QuotaKey::ConsumerByteRate,
            user: "".into(),
            client_id: "c".into(),
        };
        assert_eq!(
            table.record(sensor.clone(), 5000.0, 1000.0, Kept::UnlessThrottled),
            0
        );
        assert!(table.record(sensor.clone(), 10_000.0, 1000.0, Kept::UnlessThrottled) > 0);
        // Only measured: 4000 bytes within the quota, taken back all the
        // same (a fetch another quota throttles).
        assert_eq!(table.record(sensor.clone(), 4000.0, 1000.0, Kept::Never), 0);
        // The refused 10 000 bytes were taken back: 5000 more still fit.
        assert_eq!(
            table.record(sensor.clone(), 5000.0, 1000.0, Kept::UnlessThrottled),
            0
        );
        assert_eq!(table.len(), 1);
    }
}
