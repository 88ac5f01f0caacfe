//! Connection limits, as Kafka 4.1.1 applied them when measured with the
//! same raw clients and kafka-configs: `max.connections.per.ip` (and its
//! overrides) closes a connection past the limit at once;
//! `max.connections` holds a new connection unserved until one closes or
//! the limit is raised; `max.connection.creation.rate` delays accepting.
//! The limits are set on the command line or changed at runtime with
//! IncrementalAlterConfigs, for this broker or as the cluster default,
//! survive a restart, and DescribeConfigs shows where each value comes
//! from. Connections from 127.0.0.2 stand for a second host.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::wire::{closed_silently, metadata_answers, Outcome, RawClient};
use common::{wait_until, Broker, BrokerOptions};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

const RESOURCE_BROKER: i8 = 4;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
/// DescribeConfigs sources.
const DYNAMIC_BROKER_CONFIG: i8 = 2;
const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
const STATIC_BROKER_CONFIG: i8 = 4;
const DEFAULT_CONFIG: i8 = 5;
const INT_MAX: &str = "2147483647";

const SECOND_HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// [`alter`] (not validate-only) that must be taken.
fn alter_ok(client: &mut RawClient, broker: &str, ops: &[(&str, i8, Option<&str>)]) {
    assert_eq!(
        alter(client, broker, ops, false),
        (0, None),
        "{broker:?} {ops:?}"
    );
}

/// One IncrementalAlterConfigs of one BROKER resource (`""` is the cluster
/// default): (error code, message).
fn alter(
    client: &mut RawClient,
    broker: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let mut resource = AlterConfigsResource::default();
    resource.resource_type = RESOURCE_BROKER;
    resource.resource_name = StrBytes::from_string(broker.to_string());
    resource.configs = ops
        .iter()
        .map(|(name, op, value)| {
            let mut config = AlterableConfig::default();
            config.name = StrBytes::from_string(name.to_string());
            config.config_operation = *op;
            config.value = value.map(|v| StrBytes::from_string(v.to_string()));
            config
        })
        .collect();
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources = vec![resource];
    request.validate_only = validate_only;
    let response: IncrementalAlterConfigsResponse =
        client.request(ApiKey::IncrementalAlterConfigs, 1, &request);
    let answer = &response.responses[0];
    (
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// The connection configs of BROKER resource `broker`, with synonyms.
fn describe(client: &mut RawClient, broker: &str) -> Vec<DescribeConfigsResourceResult> {
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = RESOURCE_BROKER;
    resource.resource_name = StrBytes::from_string(broker.to_string());
    resource.configuration_keys = None;
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    request.include_synonyms = true;
    let response: DescribeConfigsResponse = client.request(ApiKey::DescribeConfigs, 4, &request);
    assert_eq!(response.results[0].error_code, 0, "describe {broker:?}");
    response.results[0]
        .configs
        .iter()
        .filter(|c| c.name.contains("connection"))
        .cloned()
        .collect()
}

/// (value, source, synonyms as (source, value)) of `name`.
type Shown = (Option<String>, i8, Vec<(i8, Option<String>)>);

fn shown(configs: &[DescribeConfigsResourceResult], name: &str) -> Shown {
    let config = configs
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} is not described"));
    (
        config.value.as_ref().map(|v| v.to_string()),
        config.config_source,
        config
            .synonyms
            .iter()
            .map(|s| (s.source, s.value.as_ref().map(|v| v.to_string())))
            .collect(),
    )
}

fn some(value: &str) -> Option<String> {
    Some(value.to_string())
}

/// A new connection from `source` is served (answers a Metadata request).
fn served_from(bootstrap: &str, source: Ipv4Addr) -> Option<RawClient> {
    let mut client = RawClient::connect_from(bootstrap, source);
    metadata_answers(&mut client).then_some(client)
}

/// A new connection from `source` is closed without an answer.
fn refused_from(bootstrap: &str, source: Ipv4Addr) -> bool {
    let mut client = RawClient::connect_from(bootstrap, source);
    let _ = metadata_answers(&mut client);
    closed_silently(&client.outcome_within(Duration::from_secs(2)))
}

/// Holds `count` served connections from `source` (each within 10 s: the
/// slot of a connection that just closed, such as the harness's readiness
/// probe, is given back a moment later).
fn hold(bootstrap: &str, source: Ipv4Addr, count: usize) -> Vec<RawClient> {
    let mut held = Vec::with_capacity(count);
    for i in 0..count {
        wait_until(
            Duration::from_secs(10),
            &format!("connection {i} from {source}"),
            || {
                served_from(bootstrap, source)
                    .map(|c| held.push(c))
                    .is_some()
            },
        );
    }
    held
}

/// Goal: `max.connections.per.ip` and its overrides close connections past
/// the limit at once and leave other addresses served; changes through
/// IncrementalAlterConfigs (for this broker and as the cluster default)
/// apply to the next connection, are refused with Kafka's messages when
/// bad, are shown by DescribeConfigs with their sources, and survive a
/// restart. Existing connections are never closed by a lower limit.
#[test]
fn connections_past_max_connections_per_ip_are_closed_and_the_limits_change_at_runtime_like_kafka()
{
    let mut broker = Broker::start(BrokerOptions::default().arg("--max-connections-per-ip", 3));
    let bootstrap = broker.bootstrap();
    let local = Ipv4Addr::LOCALHOST;

    // Three from one address, the fourth closed unanswered; another address
    // is still served.
    let mut held = hold(&bootstrap, local, 3);
    assert!(
        refused_from(&bootstrap, local),
        "a 4th connection was served"
    );
    let mut admin = served_from(&bootstrap, SECOND_HOST).expect("another address is served");
    assert!(
        held.iter_mut().all(metadata_answers),
        "held connections still served"
    );
    // A closed connection frees its slot.
    held.pop();
    wait_until(Duration::from_secs(10), "a freed slot", || {
        served_from(&bootstrap, local)
            .map(|c| held.push(c))
            .is_some()
    });
    assert!(refused_from(&bootstrap, local));

    // Refused changes, with Kafka 4.1.1's answers; nothing changes.
    let refusals: [(&str, i8, &str, i16, &str); 9] = [
        ("max.connections.per.ip", SET, "-1", INVALID_REQUEST,
            "Invalid value -1 for configuration max.connections.per.ip: Value must be at least 0"),
        ("max.connections.per.ip", SET, "abc", INVALID_REQUEST,
            "Invalid value abc for configuration max.connections.per.ip: Not a number of type INT"),
        ("max.connections.per.ip", SET, "0", INVALID_REQUEST,
            "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."),
        ("max.connections.per.ip.overrides", SET, "127.0.0.1", INVALID_REQUEST,
            "Error parsing configuration property 'max.connections.per.ip.overrides': begin 0, end -1, length 9"),
        ("max.connections.per.ip.overrides", SET, "a b:3", INVALID_REQUEST,
            "max.connections.per.ip.overrides contains invalid addresses : a b"),
        ("max.connections", SET, "0", INVALID_REQUEST,
            "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connections 0 for configuration Invalid dynamic configuration"),
        ("max.connections", APPEND, "5", INVALID_CONFIG,
            "Config value append is not allowed for config key: max.connections"),
        ("num.partitions", SET, "3", INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(num.partitions)"),
        ("ssl.keystore.location", SET, "/x", INVALID_REQUEST,
            "These security configs can be dynamically updated only per-listener using the listener prefix: HashSet(ssl.keystore.location)"),
    ];
    for (name, op, value, code, message) in refusals {
        for resource in ["", "0"] {
            assert_eq!(
                alter(&mut admin, resource, &[(name, op, Some(value))], false),
                (code, some(message)),
                "{name} {op} {value} on {resource:?}"
            );
        }
    }
    // Kafka checks the configs a change leaves: deleting one it would
    // refuse to set is taken.
    for name in ["num.partitions", "ssl.keystore.location"] {
        for resource in ["", "0"] {
            assert_eq!(
                alter(&mut admin, resource, &[(name, DELETE, None)], false),
                (0, None),
                "delete {name} on {resource:?}"
            );
        }
    }
    // A listener's own keystore is taken per broker, as Kafka takes it
    // (kept even for a listener this broker does not have, which reads
    // nothing), and refused cluster-wide in Kafka's words.
    let keystore = "listener.name.ssl.ssl.keystore.location";
    alter_ok(&mut admin, "0", &[(keystore, SET, Some("/x"))]);
    assert_eq!(
        alter(&mut admin, "", &[(keystore, SET, Some("/x"))], false),
        (
            INVALID_REQUEST,
            some("Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.ssl.ssl.keystore.location)")
        )
    );
    alter_ok(&mut admin, "0", &[(keystore, DELETE, None)]);
    // Kafka takes a listener's own value of its other configs; those not
    // read here (all but the keystores and the connection limits) are
    // refused rather than kept unread. Deleting one is taken.
    for name in [
        "listener.name.plaintext.max.connections.per.ip",
        "listener.name.ssl.ssl.allow.dn.changes",
    ] {
        assert_eq!(
            alter(&mut admin, "0", &[(name, SET, Some("5"))], false),
            (
                INVALID_REQUEST,
                Some(format!(
                    "Cannot update these configs dynamically: Set({name})"
                ))
            )
        );
        alter_ok(&mut admin, "0", &[(name, DELETE, None)]);
    }
    // Checked, not applied.
    assert_eq!(
        alter(
            &mut admin,
            "",
            &[("max.connections.per.ip", SET, Some("10"))],
            true
        ),
        (0, None)
    );
    assert!(
        refused_from(&bootstrap, local),
        "validate_only applied the change"
    );
    assert!(describe(&mut admin, "").is_empty());

    // The cluster default raises the limit to 5.
    alter_ok(
        &mut admin,
        "",
        &[("max.connections.per.ip", SET, Some("5"))],
    );
    held.extend(hold(&bootstrap, local, 2));
    assert!(
        refused_from(&bootstrap, local),
        "a 6th connection was served"
    );

    // This broker's own override lets the second host hold just one: the
    // admin connection it has stays served, a new one is closed.
    alter_ok(
        &mut admin,
        "0",
        &[(
            "max.connections.per.ip.overrides",
            SET,
            Some(" 127.0.0.2 : 1 "),
        )],
    );
    assert!(refused_from(&bootstrap, SECOND_HOST));
    assert!(
        metadata_answers(&mut admin),
        "a lower limit closed a connection"
    );

    let expect_shown = |admin: &mut RawClient| {
        let default = describe(admin, "");
        assert_eq!(default.len(), 1, "only the default's own configs");
        assert_eq!(
            shown(&default, "max.connections.per.ip"),
            (
                some("5"),
                DYNAMIC_DEFAULT_BROKER_CONFIG,
                vec![(DYNAMIC_DEFAULT_BROKER_CONFIG, some("5"))]
            )
        );
        let mine = describe(admin, "0");
        assert_eq!(
            shown(&mine, "max.connections.per.ip"),
            (
                some("5"),
                DYNAMIC_DEFAULT_BROKER_CONFIG,
                vec![
                    (DYNAMIC_DEFAULT_BROKER_CONFIG, some("5")),
                    (STATIC_BROKER_CONFIG, some("3")),
                    (DEFAULT_CONFIG, some(INT_MAX)),
                ]
            )
        );
        assert_eq!(
            shown(&mine, "max.connections.per.ip.overrides"),
            (
                // Kafka describes the value it parsed (trimmed), each
                // synonym as it was given.
                some("127.0.0.2 : 1"),
                DYNAMIC_BROKER_CONFIG,
                vec![
                    (DYNAMIC_BROKER_CONFIG, some(" 127.0.0.2 : 1 ")),
                    (DEFAULT_CONFIG, some(""))
                ]
            )
        );
        assert_eq!(
            shown(&mine, "max.connections"),
            (
                some(INT_MAX),
                DEFAULT_CONFIG,
                vec![(DEFAULT_CONFIG, some(INT_MAX))]
            )
        );
    };
    expect_shown(&mut admin);

    // After a restart: the same values, in force.
    drop(held);
    drop(admin);
    broker.restart();
    let mut admin = served_from(&bootstrap, SECOND_HOST).expect("served after restart");
    expect_shown(&mut admin);
    assert!(
        refused_from(&bootstrap, SECOND_HOST),
        "the override is lost"
    );
    let mut held = hold(&bootstrap, local, 5);
    assert!(refused_from(&bootstrap, local), "the default is lost");

    // Deleting the default brings back the command line's 3 for the next
    // connections; deleting the override, the second host's 3.
    alter_ok(&mut admin, "", &[("max.connections.per.ip", DELETE, None)]);
    held.truncate(2);
    wait_until(Duration::from_secs(10), "freed slots", || {
        served_from(&bootstrap, local)
            .map(|c| held.push(c))
            .is_some()
    });
    assert!(
        refused_from(&bootstrap, local),
        "the command line's 3 is not back"
    );
    alter_ok(
        &mut admin,
        "0",
        &[("max.connections.per.ip.overrides", DELETE, None)],
    );
    let _second = hold(&bootstrap, SECOND_HOST, 2);
    assert!(refused_from(&bootstrap, SECOND_HOST));
    assert!(describe(&mut admin, "").is_empty());
    broker.assert_running();
}

/// Goal: past `max.connections` a new connection is held unserved (not
/// closed) until one closes or the limit is raised at runtime, as Kafka's
/// acceptor does; a broker with such a waiting connection still shuts down
/// promptly.
#[test]
fn past_max_connections_a_new_connection_waits_until_a_slot_frees_like_kafka() {
    let mut broker = Broker::start(BrokerOptions::default().arg("--max-connections", 3));
    let bootstrap = broker.bootstrap();
    let local = Ipv4Addr::LOCALHOST;
    let mut admin = served_from(&bootstrap, SECOND_HOST).expect("admin served");
    let mut held = hold(&bootstrap, local, 2);

    // The 4th waits: open, unanswered.
    let mut waiting = RawClient::connect_from(&bootstrap, local);
    let request = common::wire::api_versions_v0_frames(1);
    waiting.write_raw(&request).expect("send");
    assert_eq!(
        waiting.outcome_within(Duration::from_secs(2)),
        Outcome::OpenAndSilent,
        "a connection past max.connections was served or closed"
    );
    // One closes: the waiting one is served.
    held.pop();
    assert!(
        waiting.read_frame().is_ok(),
        "the waiting connection was not served once a slot freed"
    );

    // Full again; a 5th waits until the limit is raised.
    let mut fifth = RawClient::connect_from(&bootstrap, local);
    fifth.write_raw(&request).expect("send");
    assert_eq!(
        fifth.outcome_within(Duration::from_secs(2)),
        Outcome::OpenAndSilent
    );
    alter_ok(&mut admin, "0", &[("max.connections", SET, Some("5"))]);
    assert!(
        fifth.read_frame().is_ok(),
        "raising max.connections did not serve the waiting connection"
    );
    // Admin, held, waiting and fifth: one more is served, the next waits.
    let mut sixth = RawClient::connect_from(&bootstrap, local);
    assert!(metadata_answers(&mut sixth), "the 5th connection waits");
    let mut seventh = RawClient::connect_from(&bootstrap, local);
    seventh.write_raw(&request).expect("send");
    assert_eq!(
        seventh.outcome_within(Duration::from_secs(2)),
        Outcome::OpenAndSilent
    );
    assert_eq!(
        shown(&describe(&mut admin, "0"), "max.connections"),
        (
            some("5"),
            DYNAMIC_BROKER_CONFIG,
            vec![
                (DYNAMIC_BROKER_CONFIG, some("5")),
                (STATIC_BROKER_CONFIG, some("3")),
                (DEFAULT_CONFIG, some(INT_MAX)),
            ]
        )
    );

    // Shutdown does not wait for the held connection's slot.
    let started = Instant::now();
    assert!(broker.terminate_status().success());
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "shutdown took {:?} with a connection waiting for a slot",
        started.elapsed()
    );
    drop((held, waiting, fifth, sixth, seventh));
}

/// Goal: past `max.connection.creation.rate` the broker delays accepting,
/// then serves every connection (Kafka measured the same shape: about the
/// rate's worth a second once the ten-second window fills).
#[test]
fn past_max_connection_creation_rate_accepting_waits_and_every_connection_is_served() {
    let broker = Broker::start(BrokerOptions::default().arg("--max-connection-creation-rate", 2));
    let bootstrap = broker.bootstrap();
    accepting_waits_past_two_a_second(&bootstrap);
}

/// Opens 25 connections one after another under a creation rate of 2 a
/// second: over Kafka's 10 s minimum window about 20 go at once, the rest
/// are held about a second each, and every one is served.
fn accepting_waits_past_two_a_second(bootstrap: &str) {
    let mut took = Vec::new();
    for i in 0..25 {
        let started = Instant::now();
        let mut client = RawClient::connect(bootstrap);
        assert!(
            metadata_answers(&mut client),
            "connection {i} was not served"
        );
        took.push(started.elapsed());
    }
    let first: Duration = took[..15].iter().sum();
    let last: Duration = took[20..].iter().sum();
    assert!(
        last >= Duration::from_millis(2000),
        "the last 5 connections at 2 a second took only {last:?}"
    );
    assert!(
        first * 4 < last,
        "the first 15 connections were held too ({first:?}, the last 5 {last:?})"
    );
}

/// Goal: `max.connections.per.ip.overrides` may name hosts, as Kafka's do
/// (measured on Kafka 4.1.1): each applies to the address the name
/// resolves to when the overrides are applied; a name that does not
/// resolve is taken by IncrementalAlterConfigs and shown, but the
/// overrides in force before stay; of two entries naming one address, the
/// later in Kafka's hash-map order wins, whatever order they are given in;
/// a host name on the command line that does not resolve stops the broker.
#[test]
fn overrides_naming_hosts_apply_to_the_address_they_resolve_to_like_kafka() {
    common::assert_refuses_to_start(
        &[
            "--max-connections-per-ip-overrides",
            "no-such-host.invalid:2",
        ],
        "max.connections.per.ip.overrides: no-such-host.invalid: Name or service not known",
    );
    let mut broker = Broker::start(
        BrokerOptions::default().arg("--max-connections-per-ip-overrides", "localhost:2"),
    );
    let bootstrap = broker.bootstrap();
    let local = Ipv4Addr::LOCALHOST;
    let mut held = hold(&bootstrap, local, 2);
    assert!(
        refused_from(&bootstrap, local),
        "a 3rd from localhost was served"
    );
    let mut admin = served_from(&bootstrap, SECOND_HOST).expect("another address is served");
    let _second = hold(&bootstrap, SECOND_HOST, 3);

    // A host that does not resolve is taken and shown; the overrides in
    // force stay (localhost's 3 is not applied either).
    let unresolved = "localhost:3,no-such-host.invalid:1";
    alter_ok(
        &mut admin,
        "0",
        &[("max.connections.per.ip.overrides", SET, Some(unresolved))],
    );
    assert_eq!(
        shown(
            &describe(&mut admin, "0"),
            "max.connections.per.ip.overrides"
        )
        .0,
        some(unresolved)
    );
    assert!(
        refused_from(&bootstrap, local),
        "an override naming a host that does not resolve was applied"
    );
    broker.assert_running();
    assert!(broker
        .log_contents()
        .contains("max.connections.per.ip.overrides could not be applied: no-such-host.invalid"));

    // localhost (first in Kafka's order) and 127.0.0.1 (later): 127.0.0.1's
    // count applies, smaller or larger, given first or last.
    alter_ok(
        &mut admin,
        "0",
        &[(
            "max.connections.per.ip.overrides",
            SET,
            Some("127.0.0.1:2,localhost:9"),
        )],
    );
    assert!(
        refused_from(&bootstrap, local),
        "127.0.0.1:2 did not win over localhost:9"
    );
    for (value, count) in [
        ("127.0.0.1:4,localhost:1", 4),
        ("localhost:3, 127.0.0.1:5", 5),
    ] {
        alter_ok(
            &mut admin,
            "0",
            &[("max.connections.per.ip.overrides", SET, Some(value))],
        );
        held.extend(hold(&bootstrap, local, count - held.len()));
        assert!(
            refused_from(&bootstrap, local),
            "{value}: more than {count}"
        );
    }

    // After a restart the stored overrides that do not resolve leave the
    // command line's in force.
    alter_ok(
        &mut admin,
        "0",
        &[("max.connections.per.ip.overrides", SET, Some(unresolved))],
    );
    drop((held, admin, _second));
    broker.restart();
    let _held = hold(&bootstrap, local, 2);
    assert!(
        refused_from(&bootstrap, local),
        "the command line's localhost:2 is lost"
    );
    broker.assert_running();
}

/// Goal: a listener's own `max.connections` and `max.connection.creation.rate`
/// (`listener.name.plaintext.*`) apply besides the broker's, as Kafka
/// 4.1.1's did when measured: past the listener's count a new connection
/// waits unserved until one closes; past its rate accepting waits and every
/// connection is served. Taken for this broker and cluster-wide, refused
/// with the words of the config they override, shown by DescribeConfigs as
/// Kafka shows them; a listener this broker lacks is not checked.
#[test]
fn a_listeners_own_connection_limits_apply_like_kafka() {
    let mut broker = Broker::start(BrokerOptions::default());
    let bootstrap = broker.bootstrap();
    let local = Ipv4Addr::LOCALHOST;
    let mut admin = served_from(&bootstrap, SECOND_HOST).expect("admin served");
    let own = "listener.name.plaintext.max.connections";
    let rate = "listener.name.plaintext.max.connection.creation.rate";
    let refusals = [
        (own, "0", "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connections 0 for configuration Invalid dynamic configuration"),
        (own, "-1", "Invalid value -1 for configuration max.connections: Value must be at least 0"),
        (own, "abc", "Invalid value abc for configuration max.connections: Not a number of type INT"),
        (rate, "0", "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connection.creation.rate 0 for configuration Invalid dynamic configuration"),
        (rate, "1.5", "Invalid value 1.5 for configuration max.connection.creation.rate: Not a number of type INT"),
    ];
    for (name, value, message) in refusals {
        for resource in ["", "0"] {
            assert_eq!(
                alter(&mut admin, resource, &[(name, SET, Some(value))], false),
                (INVALID_REQUEST, some(message)),
                "{name}={value} on {resource:?}"
            );
        }
    }
    // No listener of this broker is named nosuch: nothing checks its 0.
    let other = "listener.name.nosuch.max.connections";
    alter_ok(&mut admin, "0", &[(other, SET, Some("0"))]);
    alter_ok(&mut admin, "0", &[(other, DELETE, None)]);

    // Three on the listener (the admin connection is one): the 4th waits.
    alter_ok(&mut admin, "0", &[(own, SET, Some("3"))]);
    let mut held = hold(&bootstrap, local, 2);
    let request = common::wire::api_versions_v0_frames(1);
    let mut waiting = RawClient::connect_from(&bootstrap, local);
    waiting.write_raw(&request).expect("send");
    assert_eq!(
        waiting.outcome_within(Duration::from_secs(2)),
        Outcome::OpenAndSilent,
        "a connection past the listener's max.connections was served or closed"
    );
    held.pop();
    assert!(
        waiting.read_frame().is_ok(),
        "the waiting connection was not served once a slot freed"
    );
    assert_eq!(
        shown(&describe(&mut admin, "0"), own),
        (
            some("3"),
            DYNAMIC_BROKER_CONFIG,
            vec![
                (DYNAMIC_BROKER_CONFIG, some("3")),
                (DEFAULT_CONFIG, some(INT_MAX))
            ]
        )
    );
    // The cluster default's 4 is under this broker's 3 until that goes.
    alter_ok(&mut admin, "", &[(own, SET, Some("4"))]);
    let mut fifth = RawClient::connect_from(&bootstrap, local);
    fifth.write_raw(&request).expect("send");
    assert_eq!(
        fifth.outcome_within(Duration::from_secs(2)),
        Outcome::OpenAndSilent
    );
    alter_ok(&mut admin, "0", &[(own, DELETE, None)]);
    assert!(fifth.read_frame().is_ok(), "the default's 4 did not apply");
    let default = describe(&mut admin, "");
    assert_eq!(
        shown(&default, own),
        (
            some("4"),
            DYNAMIC_DEFAULT_BROKER_CONFIG,
            vec![(DYNAMIC_DEFAULT_BROKER_CONFIG, some("4"))]
        )
    );
    let entry = default.iter().find(|c| c.name.as_str() == own).unwrap();
    assert!(entry.read_only && !entry.is_sensitive);
    assert_eq!(entry.config_type, 3, "INT");
    alter_ok(&mut admin, "", &[(own, DELETE, None)]);
    drop((held, waiting, fifth));

    // 2 a second on the listener: about 20 at once, then each held about a
    // second, every one served.
    alter_ok(&mut admin, "0", &[(rate, SET, Some("2"))]);
    accepting_waits_past_two_a_second(&bootstrap);
    assert_eq!(
        shown(&describe(&mut admin, "0"), rate).2,
        vec![
            (DYNAMIC_BROKER_CONFIG, some("2")),
            (DEFAULT_CONFIG, some(INT_MAX))
        ]
    );
    broker.assert_running();
}
