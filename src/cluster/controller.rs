//! The controller: validates admin requests against the image, appends the
//! resulting records to the metadata log, then has every shard apply them
//! before answering. Runs on shard 0, one request at a time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use uuid::Uuid;

use super::image::{place_partitions, MetadataImage, MetadataRecord};
use super::metadata_log;
use crate::config::limits::{
    CREATE_TOPICS_PARTITIONS_MAX, OPEN_FILES_RESERVED_MAX, TOPIC_NAME_BYTES_MAX,
    TOPIC_PARTITIONS_MAX,
};
use crate::config::{ConfigAlteration, TopicConfigs};
use crate::protocol::ErrorCode;
use crate::quota::sensors::MutationCharge;
use crate::quota::{
    self, QuotaAlteration, QuotaAlterationResults, QuotaKey, QuotaValue, RequestedEntity,
};
use crate::security::acl::{Acl, AclFilter};
use crate::security::delegation_token::{self, DelegationToken};
use crate::security::scram::{ScramMechanism, ITERATIONS_MAX, ITERATIONS_MIN};
use crate::shard::messages::{
    AdminOutcome, ControllerReply, ControllerRequest, CreatePartitionsSpec, CreateTopicOutcome,
    CreateTopicSpec, ScramUpsertion, ShardReply, ShardRequest,
};
use crate::shard::Shard;

/// The shard the controller runs on.
pub const CONTROLLER_SHARD: usize = 0;

/// Handles one controller request on shard 0.
pub async fn handle(shard: &Rc<Shard>, request: ControllerRequest) -> ControllerReply {
    assert_eq!(
        shard.id, CONTROLLER_SHARD,
        "controller requests run on shard 0"
    );
    let _permit = shard.controller_lock.acquire_permit(1).await;
    match request {
        ControllerRequest::CreateTopics {
            topics,
            validate_only,
            quota,
        } => {
            let mut charge = MutationCharge::new(&shard.mutation_buckets, quota);
            let outcomes = create_topics(shard, topics, validate_only, &mut charge).await;
            ControllerReply::CreateTopics(outcomes, charge.throttle_ms())
        }
        ControllerRequest::DeleteTopics { names, quota } => {
            let mut charge = MutationCharge::new(&shard.mutation_buckets, quota);
            let outcomes = delete_topics(shard, names, &mut charge).await;
            ControllerReply::DeleteTopics(outcomes, charge.throttle_ms())
        }
        ControllerRequest::AlterTopicConfigs {
            topics,
            validate_only,
        } => ControllerReply::AlterTopicConfigs(
            alter_topic_configs(shard, topics, validate_only).await,
        ),
        ControllerRequest::AlterBrokerConfigs {
            resources,
            validate_only,
        } => ControllerReply::AlterBrokerConfigs(
            alter_broker_configs(shard, resources, validate_only).await,
        ),
        ControllerRequest::AlterGroupConfigs {
            resources,
            validate_only,
        } => ControllerReply::AlterGroupConfigs(
            alter_group_configs(shard, resources, validate_only).await,
        ),
        ControllerRequest::AlterClientMetricsConfigs {
            resources,
            validate_only,
        } => ControllerReply::AlterClientMetricsConfigs(
            alter_client_metrics_configs(shard, resources, validate_only).await,
        ),
        ControllerRequest::UpdateFeatures {
            updates,
            validate_only,
        } => ControllerReply::UpdateFeatures(update_features(shard, updates, validate_only).await),
        ControllerRequest::CreatePartitions {
            topics,
            validate_only,
            quota,
        } => {
            let mut charge = MutationCharge::new(&shard.mutation_buckets, quota);
            let outcomes = create_partitions(shard, topics, validate_only, &mut charge).await;
            ControllerReply::CreatePartitions(outcomes, charge.throttle_ms())
        }
        ControllerRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        } => ControllerReply::AlterUserScramCredentials(
            alter_scram_credentials(shard, deletions, upsertions).await,
        ),
        ControllerRequest::CreateAcls { acls } => {
            ControllerReply::CreateAcls(create_acls(shard, acls).await)
        }
        ControllerRequest::DeleteAcls { filters } => {
            ControllerReply::DeleteAcls(delete_acls(shard, filters).await)
        }
        ControllerRequest::AlterClientQuotas {
            entries,
            validate_only,
        } => ControllerReply::AlterClientQuotas(
            alter_client_quotas(shard, entries, validate_only).await,
        ),
        ControllerRequest::CreateDelegationToken {
            token_id,
            signature,
            owner,
            requester,
            renewers,
            max_lifetime_ms,
        } => {
            let now = crate::partition::now_ms();
            let (expiry, max) = shard
                .config
                .delegation_tokens
                .created_timestamps(now, max_lifetime_ms);
            let token = DelegationToken {
                token_id,
                owner,
                requester,
                renewers,
                issue_timestamp_ms: now,
                max_timestamp_ms: max,
                expiry_timestamp_ms: expiry,
                credentials: signature.credentials,
                hmac_check: signature.hmac_check,
            };
            ControllerReply::CreateDelegationToken(create_delegation_token(shard, token).await)
        }
        ControllerRequest::ChangeDelegationToken {
            hmac,
            requester,
            period_ms,
            expire,
        } => ControllerReply::ChangeDelegationToken(
            change_delegation_token(shard, &hmac, &requester, period_ms, expire).await,
        ),
        ControllerRequest::SweepDelegationTokens { resigned } => {
            ControllerReply::SweepDelegationTokens(sweep_delegation_tokens(shard, resigned).await)
        }
        ControllerRequest::AllocateProducerIds { count } => {
            assert!(count > 0);
            let first = shard.image().next_producer_id;
            let record = MetadataRecord::ProducerIds {
                next_producer_id: first + count,
            };
            match commit(shard, vec![record]).await {
                Ok(()) => ControllerReply::ProducerIds(Some(first)),
                Err(e) => {
                    tracing::error!(error = %e, "cannot allocate producer ids");
                    ControllerReply::ProducerIds(None)
                }
            }
        }
    }
}

/// CreateDelegationToken, as Kafka's `DelegationTokenControlManager`: the
/// token (its id and credentials made by the asking shard, its timestamps
/// from the broker's lifetimes) in one record.
async fn create_delegation_token(
    shard: &Rc<Shard>,
    token: DelegationToken,
) -> Result<DelegationToken, ErrorCode> {
    commit_token_records(
        shard,
        vec![MetadataRecord::DelegationToken {
            token: token.clone(),
        }],
    )
    .await?;
    Ok(token)
}

/// The signature of token `token_id` under the current key, made off the
/// executor (two PBKDF2 runs), outside the controller.
pub async fn sign_token(
    config: &std::sync::Arc<delegation_token::TokenConfig>,
    token_id: &str,
) -> Result<delegation_token::Signature, ErrorCode> {
    let config = config.clone();
    let token_id = token_id.to_string();
    glommio::executor()
        .spawn_blocking(move || config.sign(&token_id))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "no random bytes for a delegation token's salt");
            ErrorCode::UnknownServerError
        })?
        .ok_or(ErrorCode::DelegationTokenAuthDisabled)
}

/// RenewDelegationToken and ExpireDelegationToken, in Kafka's order: the
/// token of the HMAC (DELEGATION_TOKEN_NOT_FOUND); to renew, not expired
/// (DELEGATION_TOKEN_EXPIRED) then the owner or a renewer
/// (DELEGATION_TOKEN_OWNER_MISMATCH); to expire, the owner or a renewer,
/// then a negative period removes it at once, else it must not have
/// expired and its expiry moves to the period from now (at most its max).
async fn change_delegation_token(
    shard: &Rc<Shard>,
    hmac: &[u8],
    requester: &str,
    period_ms: i64,
    expire: bool,
) -> Result<i64, ErrorCode> {
    let config = &shard.config.delegation_tokens;
    if !config.enabled() {
        return Err(ErrorCode::DelegationTokenAuthDisabled);
    }
    // An HMAC is HmacSHA512's 64 bytes; anything else is no token's.
    if hmac.len() != delegation_token::HMAC_BYTES {
        return Err(ErrorCode::DelegationTokenNotFound);
    }
    // Found by the HMAC's short hash, then checked whole.
    let image = shard.image();
    let check = delegation_token::hmac_check(hmac);
    let token = image
        .delegation_tokens
        .values()
        .filter(|token| token.hmac_check == check)
        .find(|token| {
            config
                .hmac(&token.token_id)
                .is_some_and(|mine| crate::security::constant_time_eq(&mine, hmac))
        })
        .ok_or(ErrorCode::DelegationTokenNotFound)?;
    let now = crate::partition::now_ms();
    if !expire && token.is_expired(now) {
        return Err(ErrorCode::DelegationTokenExpired);
    }
    if !token.may_renew(requester) {
        return Err(ErrorCode::DelegationTokenOwnerMismatch);
    }
    let (record, expiry) = if expire && period_ms < 0 {
        (
            MetadataRecord::RemoveDelegationToken {
                token_id: token.token_id.clone(),
            },
            now,
        )
    } else {
        if expire && token.is_expired(now) {
            return Err(ErrorCode::DelegationTokenExpired);
        }
        let expiry = if expire {
            token.max_timestamp_ms.min(now.saturating_add(period_ms))
        } else {
            config.renewed_expiry(token, now, period_ms)
        };
        let mut changed = (**token).clone();
        changed.expiry_timestamp_ms = expiry;
        (MetadataRecord::DelegationToken { token: changed }, expiry)
    };
    commit_token_records(shard, vec![record]).await?;
    Ok(expiry)
}

/// Removes the tokens past their expiry or max (at most
/// `SWEEP_TOKENS_MAX`), as Kafka's periodic `expireDelegationTokens` task,
/// and gives the tokens `resigned` names their new credentials where they
/// still have credentials of another key. How many it changed.
async fn sweep_delegation_tokens(
    shard: &Rc<Shard>,
    resigned: Vec<(String, delegation_token::Signature)>,
) -> usize {
    let now = crate::partition::now_ms();
    let config = &shard.config.delegation_tokens;
    let image = shard.image();
    let mut records: Vec<MetadataRecord> = image
        .delegation_tokens
        .values()
        .filter(|token| token.is_expired(now))
        .take(delegation_token::SWEEP_TOKENS_MAX)
        .map(|token| MetadataRecord::RemoveDelegationToken {
            token_id: token.token_id.clone(),
        })
        .collect();
    for (token_id, signature) in resigned {
        let Some(token) = image.delegation_tokens.get(&token_id) else {
            continue;
        };
        if token.is_expired(now) || config.signs(token) {
            continue;
        }
        let mut signed = (**token).clone();
        signed.credentials = signature.credentials;
        signed.hmac_check = signature.hmac_check;
        records.push(MetadataRecord::DelegationToken { token: signed });
    }
    let changed = records.len();
    if changed == 0 || commit_token_records(shard, records).await.is_err() {
        return 0;
    }
    changed
}

/// Commits token records; a failure is KAFKA_STORAGE_ERROR.
async fn commit_token_records(
    shard: &Rc<Shard>,
    records: Vec<MetadataRecord>,
) -> Result<(), ErrorCode> {
    commit(shard, records).await.map_err(|e| {
        tracing::error!(error = %e, "cannot store a delegation token change");
        ErrorCode::KafkaStorageError
    })
}

/// Most records one ACL request may write (Kafka's
/// `QuorumController.MAX_RECORDS_PER_USER_OP`).
const ACL_RECORDS_PER_REQUEST_MAX: usize = 10_000;

/// CreateAcls, following Kafka's `AclControlManager`: an ACL equal to a
/// stored one (or to an earlier one of the request) succeeds without a
/// record; more than 10000 new ACLs fail the whole request.
async fn create_acls(shard: &Rc<Shard>, acls: Vec<Acl>) -> Result<(), (ErrorCode, Option<String>)> {
    let image = shard.image();
    let mut seen = HashSet::new();
    let mut records = Vec::new();
    for acl in acls {
        if image.acls.find(&acl).is_some() || !seen.insert(acl.clone()) {
            continue;
        }
        if records.len() >= ACL_RECORDS_PER_REQUEST_MAX {
            return Err((
                ErrorCode::PolicyViolation,
                Some("Unable to perform excessively large batch operation.".into()),
            ));
        }
        let mut id = Uuid::new_v4();
        while image.acls.contains(&id) {
            id = Uuid::new_v4();
        }
        records.push(MetadataRecord::AccessControlEntry { id, acl });
    }
    drop(image);
    if records.is_empty() {
        return Ok(());
    }
    commit(shard, records).await.map_err(|e| {
        tracing::error!(error = %e, "cannot store ACLs");
        (ErrorCode::UnknownServerError, None)
    })
}

/// AlterClientQuotas, following Kafka's `ClientQuotaControlManager`: one
/// result per distinct entity, in the order first named. An entity named
/// twice, or with a key named twice, gets "Ignoring duplicate entity"
/// (its first alteration still applies, as in Kafka). Each entity is
/// checked whole and changes nothing when any of its operations is
/// refused; removing a key the entity lacks (or one Kafka does not know)
/// succeeds without a record, as does setting a key to its value.
async fn alter_client_quotas(
    shard: &Rc<Shard>,
    entries: Vec<QuotaAlteration>,
    validate_only: bool,
) -> QuotaAlterationResults {
    // IP entities may name hosts: Kafka takes those that resolve. Resolved
    // off the executor, each name once.
    let hosts = entries
        .iter()
        .flat_map(|(requested, _)| requested.iter())
        .filter(|(kind, _)| kind == "ip")
        .filter_map(|(_, name)| name.clone());
    let resolved = crate::server::hosts::resolve_all(hosts).await;
    let resolvable = |name: &str| resolved.get(name).is_some_and(Option::is_some);
    let image = shard.image();
    let mut results: Vec<(RequestedEntity, Option<String>)> = Vec::new();
    // Each entity's position in `results`, by its sorted components, so a
    // large request costs linear time, as Kafka's maps do.
    let mut positions: HashMap<RequestedEntity, usize> = HashMap::new();
    let mut records = Vec::new();
    for (requested, ops) in entries {
        let mut keys = HashSet::with_capacity(ops.len());
        let duplicate_key = !ops.iter().all(|(key, _)| keys.insert(key.as_str()));
        let mut sorted = requested.clone();
        sorted.sort();
        if let Some(&position) = positions.get(&sorted) {
            results[position].1 = Some(format!(
                "Ignoring duplicate entity {}",
                quota::entity_text(&requested)
            ));
            continue;
        }
        positions.insert(sorted, results.len());
        if duplicate_key {
            let message = format!(
                "Ignoring duplicate entity {}",
                quota::entity_text(&requested)
            );
            results.push((requested, Some(message)));
            continue;
        }
        let checked = quota::check_entity(&requested, &resolvable).and_then(|entity| {
            let mut mine = Vec::new();
            for (key, value) in ops {
                let change = match value {
                    // A removal is not checked: a key the entity lacks is
                    // no change.
                    None => QuotaKey::parse(&key)
                        .filter(|k| image.client_quotas.get(&entity, *k).is_some())
                        .map(|k| (k, None)),
                    Some(value) => {
                        let parsed = quota::check_value(&entity, &key, value)?;
                        let current = image.client_quotas.get(&entity, parsed);
                        (current.map(QuotaValue) != Some(QuotaValue(value)))
                            .then_some((parsed, Some(QuotaValue(value))))
                    }
                };
                if let Some((key, value)) = change {
                    mine.push(MetadataRecord::ClientQuota {
                        entity: entity.clone(),
                        key,
                        value,
                    });
                }
            }
            Ok(mine)
        });
        match checked {
            Ok(mine) => {
                records.extend(mine);
                results.push((requested, None));
            }
            Err(message) => results.push((requested, Some(message))),
        }
    }
    drop(image);
    if records.len() > QUOTA_RECORDS_PER_REQUEST_MAX {
        return Err((
            ErrorCode::PolicyViolation,
            "Request parameters do not satisfy the configured policy.".into(),
        ));
    }
    if !validate_only && !records.is_empty() {
        // Applied with the addresses the names were checked with.
        shard.ip_rates.checked.keep(resolved);
        let committed = commit(shard, records).await;
        shard.ip_rates.checked.keep(Default::default());
        committed.map_err(|e| {
            tracing::error!(error = %e, "cannot store client quotas");
            (
                ErrorCode::UnknownServerError,
                "The server experienced an unexpected error when processing the request."
                    .to_string(),
            )
        })?;
    }
    Ok(results)
}

/// Most records one AlterClientQuotas may write (Kafka's
/// `QuorumController.MAX_RECORDS_PER_USER_OP`).
const QUOTA_RECORDS_PER_REQUEST_MAX: usize = 10_000;

/// DeleteAcls, following Kafka's `AclControlManager`: every ACL a filter
/// matches is deleted and listed under that filter (an ACL two filters
/// match under both); more than 10000 matches fail the whole request.
async fn delete_acls(
    shard: &Rc<Shard>,
    filters: Vec<AclFilter>,
) -> Result<Vec<Vec<Acl>>, (ErrorCode, Option<String>)> {
    let image = shard.image();
    let mut removed: HashSet<Uuid> = HashSet::new();
    let mut records = Vec::new();
    let mut matched = Vec::with_capacity(filters.len());
    for filter in &filters {
        let mut mine = Vec::new();
        for (id, acl) in image.acls.iter() {
            if !filter.matches(acl) {
                continue;
            }
            // Counted in distinct removals, checked at every match, as
            // Kafka's AclControlManager does.
            if records.len() >= ACL_RECORDS_PER_REQUEST_MAX {
                return Err((
                    ErrorCode::InvalidRequest,
                    Some(format!(
                        "Cannot remove more than {ACL_RECORDS_PER_REQUEST_MAX} acls in a single delete operation."
                    )),
                ));
            }
            if removed.insert(*id) {
                records.push(MetadataRecord::RemoveAccessControlEntry { id: *id });
            }
            mine.push((**acl).clone());
        }
        matched.push(mine);
    }
    drop(image);
    if !records.is_empty() {
        commit(shard, records).await.map_err(|e| {
            tracing::error!(error = %e, "cannot delete ACLs");
            (ErrorCode::UnknownServerError, None)
        })?;
    }
    Ok(matched)
}

/// Checks a user and mechanism of AlterUserScramCredentials as Kafka's
/// controller does.
fn checked_scram_user(
    name: &str,
    mechanism: i8,
) -> Result<ScramMechanism, (ErrorCode, Option<&'static str>)> {
    if name.is_empty() {
        return Err((
            ErrorCode::UnacceptableCredential,
            Some("Username must not be empty"),
        ));
    }
    ScramMechanism::from_type(mechanism).ok_or((
        ErrorCode::UnsupportedSaslMechanism,
        Some("Unknown SCRAM mechanism"),
    ))
}

/// AlterUserScramCredentials, following Kafka's `ScramControlManager`: a
/// user named twice in one request (deletion or upsertion, whatever the
/// mechanism) is DUPLICATE_RESOURCE and nothing of it is done; deleting a
/// credential that does not exist is RESOURCE_NOT_FOUND; iterations must be
/// 4096..=16384. The rest is committed at once. Answers deletions done,
/// then upsertions done, then refusals, each in request order (Kafka's
/// order within each group is a hash map's).
async fn alter_scram_credentials(
    shard: &Rc<Shard>,
    deletions: Vec<(String, i8)>,
    upsertions: Vec<ScramUpsertion>,
) -> Vec<(String, i16, Option<String>)> {
    const TWICE: &str = "A user credential cannot be altered twice in the same request";
    let image = shard.image();
    // Refusals in order, and the users refused (each user answered once).
    let mut refused: Vec<(String, ErrorCode, Option<&'static str>)> = Vec::new();
    let mut refused_users: HashSet<String> = HashSet::new();
    // Accepted records, in request order (deletions come first); None once
    // taken back by a second mention of the user.
    let mut changes: Vec<Option<(String, MetadataRecord)>> = Vec::new();
    let mut accepted: std::collections::HashMap<String, usize> = Default::default();
    let requested = deletions
        .into_iter()
        .map(|(name, mechanism)| (name, Err(mechanism)))
        .chain(upsertions.into_iter().map(|u| (u.name.clone(), Ok(u))));
    for (name, request) in requested {
        if refused_users.contains(&name) {
            continue;
        }
        let checked = if let Some(at) = accepted.remove(&name) {
            changes[at] = None;
            Err((ErrorCode::DuplicateResource, Some(TWICE)))
        } else {
            match request {
                Err(mechanism) => checked_scram_user(&name, mechanism).and_then(|mechanism| {
                    image
                        .scram_credential(&name, mechanism)
                        .map(|_| MetadataRecord::RemoveUserScramCredential {
                            name: name.clone(),
                            mechanism,
                        })
                        .ok_or((
                            ErrorCode::ResourceNotFound,
                            Some("Attempt to delete a user credential that does not exist"),
                        ))
                }),
                Ok(upsertion) => {
                    checked_scram_user(&name, upsertion.mechanism).and_then(|mechanism| {
                        if upsertion.iterations < ITERATIONS_MIN {
                            return Err((
                                ErrorCode::UnacceptableCredential,
                                Some("Too few iterations"),
                            ));
                        }
                        if upsertion.iterations > ITERATIONS_MAX {
                            return Err((
                                ErrorCode::UnacceptableCredential,
                                Some("Too many iterations"),
                            ));
                        }
                        if upsertion.salted_password.is_empty() {
                            // Kafka's controller cannot make keys of an
                            // empty password (an empty HMAC key) and answers
                            // UNKNOWN_SERVER_ERROR without a message.
                            return Err((ErrorCode::UnknownServerError, None));
                        }
                        Ok(MetadataRecord::UserScramCredential {
                            name: name.clone(),
                            mechanism,
                            credential: mechanism.credential(
                                &upsertion.salted_password,
                                &upsertion.salt,
                                upsertion.iterations,
                            ),
                        })
                    })
                }
            }
        };
        match checked {
            Ok(record) => {
                accepted.insert(name.clone(), changes.len());
                changes.push(Some((name, record)));
            }
            Err((error, message)) => {
                refused_users.insert(name.clone());
                refused.push((name, error, message));
            }
        }
    }
    let (done, records): (Vec<String>, Vec<MetadataRecord>) = changes.into_iter().flatten().unzip();
    drop(image);
    let done_code = if records.is_empty() {
        0
    } else {
        match commit(shard, records).await {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!(error = %e, "cannot store SCRAM credentials");
                ErrorCode::UnknownServerError.code()
            }
        }
    };
    done.into_iter()
        .map(|name| (name, done_code, None))
        .chain(
            refused
                .into_iter()
                .map(|(name, error, message)| (name, error.code(), message.map(str::to_string))),
        )
        .collect()
}

/// Checks a topic name as Kafka does (`Topic.validate`).
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > TOPIC_NAME_BYTES_MAX {
        return Err(format!(
            "Topic name is illegal, it can't be longer than {TOPIC_NAME_BYTES_MAX} characters, topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

fn collision_key(name: &str) -> String {
    name.replace('.', "_")
}

fn outcome(error: ErrorCode, message: impl Into<String>) -> CreateTopicOutcome {
    CreateTopicOutcome {
        error_code: error.code(),
        error_message: Some(message.into()),
        topic_id: Uuid::nil(),
    }
}

/// Partitions a broker may hold with `open_files_max` descriptors when each
/// partition is budgeted `fds_per_partition` of them, after the reserve for
/// everything else; None when either is 0 (no budget).
pub fn partitions_within_open_files(open_files_max: u64, fds_per_partition: u64) -> Option<u64> {
    if open_files_max == 0 || fds_per_partition == 0 {
        return None;
    }
    let reserved = OPEN_FILES_RESERVED_MAX.min(open_files_max / 4);
    Some((open_files_max - reserved) / fds_per_partition)
}

/// The internal topics and the partitions each is created with.
fn internal_topics(shard: &Shard) -> [(&'static str, i32); 2] {
    [
        (
            OFFSETS_TOPIC,
            shard.config.groups.offsets_topic_num_partitions,
        ),
        (
            crate::txn::TXN_STATE_TOPIC,
            shard.config.txns.transaction_state_log_num_partitions,
        ),
    ]
}

/// Partitions held against the open-files budget: those that exist, and
/// room for the internal topics not created yet, so that user topics can
/// never leave consumer groups and transactions without theirs. The
/// internal topics themselves are not refused (their room is already
/// counted).
fn partitions_held(image: &MetadataImage, internal: &[(&str, i32)]) -> u64 {
    image
        .topics
        .values()
        .map(|topic| topic.partition_shards.len() as u64)
        .sum::<u64>()
        + internal
            .iter()
            .filter(|(name, _)| image.topic(name).is_none())
            .map(|(_, partitions)| (*partitions).max(0) as u64)
            .sum::<u64>()
}

/// The answer to a request for more partitions than the open-files budget
/// allows.
fn over_budget(shard: &Shard, wanted: i64, held: u64, budget: u64) -> AdminOutcome {
    (
        ErrorCode::InvalidPartitions.code(),
        Some(format!(
            "Cannot create {wanted} partitions: this broker holds or keeps room for \
             {held}, and its \
             open-files limit of {} with --topic-fds-per-partition {} allows \
             {budget}; raise the limit (ulimit -n) or delete topics.",
            shard.config.open_files_max, shard.config.topic_fds_per_partition
        )),
    )
}

/// The answer to a topic the controller mutation quota refuses (Kafka
/// leaves the message out).
const THROTTLED: (i16, Option<String>) = (ErrorCode::ThrottlingQuotaExceeded.code(), None);

async fn create_topics(
    shard: &Rc<Shard>,
    topics: Vec<CreateTopicSpec>,
    validate_only: bool,
    charge: &mut MutationCharge<'_>,
) -> Vec<CreateTopicOutcome> {
    let requested: i64 = topics
        .iter()
        .map(|spec| i64::from(spec.num_partitions.max(0)))
        .sum();
    if requested > CREATE_TOPICS_PARTITIONS_MAX {
        return topics
            .iter()
            .map(|_| {
                outcome(
                    ErrorCode::PolicyViolation,
                    "Excessively large number of partitions per request.",
                )
            })
            .collect();
    }
    let budget = partitions_within_open_files(
        shard.config.open_files_max,
        shard.config.topic_fds_per_partition,
    );
    let mut scratch = (*shard.image()).clone();
    let internal = internal_topics(shard);
    let mut held = partitions_held(&scratch, &internal);
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = topics
        .iter()
        .filter(|t| !seen.insert(t.name.clone()))
        .map(|t| t.name.clone())
        .collect();
    let mut outcomes = Vec::with_capacity(topics.len());
    let mut records = Vec::new();
    for spec in topics {
        if duplicates.contains(&spec.name) {
            outcomes.push(outcome(
                ErrorCode::InvalidRequest,
                format!(
                    "Create topics request from client contains multiple entries for topic {}",
                    spec.name
                ),
            ));
            continue;
        }
        if let Err(message) = validate_topic_name(&spec.name) {
            outcomes.push(outcome(ErrorCode::InvalidTopicException, message));
            continue;
        }
        if scratch.topic(&spec.name).is_some() {
            outcomes.push(outcome(
                ErrorCode::TopicAlreadyExists,
                format!("Topic '{}' already exists.", spec.name),
            ));
            continue;
        }
        let key = collision_key(&spec.name);
        if let Some(other) = scratch.topics.keys().find(|n| collision_key(n) == key) {
            outcomes.push(outcome(
                ErrorCode::InvalidTopicException,
                format!(
                    "Topic '{}' collides with existing topic: {other}",
                    spec.name
                ),
            ));
            continue;
        }
        if spec.num_partitions <= 0 || spec.num_partitions > TOPIC_PARTITIONS_MAX {
            outcomes.push(outcome(
                ErrorCode::InvalidPartitions,
                format!("Number of partitions must be between 1 and {TOPIC_PARTITIONS_MAX}."),
            ));
            continue;
        }
        let is_internal = internal.iter().any(|(name, _)| *name == spec.name);
        if let (Some(budget), false) = (budget, is_internal) {
            if held + spec.num_partitions as u64 > budget {
                let (error_code, error_message) =
                    over_budget(shard, i64::from(spec.num_partitions), held, budget);
                outcomes.push(CreateTopicOutcome {
                    error_code,
                    error_message,
                    topic_id: Uuid::nil(),
                });
                continue;
            }
        }
        if spec.replication_factor <= 0 {
            outcomes.push(outcome(
                ErrorCode::InvalidReplicationFactor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            ));
            continue;
        }
        if spec.replication_factor > 1 {
            outcomes.push(outcome(
                ErrorCode::InvalidReplicationFactor,
                format!(
                    "Unable to replicate the partition {} time(s): The target replication factor of {} cannot be reached because only 1 broker(s) are registered.",
                    spec.replication_factor, spec.replication_factor
                ),
            ));
            continue;
        }
        let requested = spec.configs.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let configs: BTreeMap<String, String> =
            match TopicConfigs::from_overrides(requested, &shard.broker_defaults()) {
                Ok(configs) => configs.overrides().clone(),
                Err(message) => {
                    outcomes.push(outcome(ErrorCode::InvalidConfig, message));
                    continue;
                }
            };
        // Counted once every check passed, validate_only too, as Kafka.
        if !charge.record(spec.num_partitions as usize) {
            outcomes.push(CreateTopicOutcome {
                error_code: THROTTLED.0,
                error_message: THROTTLED.1,
                topic_id: Uuid::nil(),
            });
            continue;
        }
        let topic_id = Uuid::new_v4();
        let record = MetadataRecord::CreateTopic {
            name: spec.name.clone(),
            topic_id,
            partition_shards: place_partitions(
                &scratch,
                shard.nr_shards,
                spec.num_partitions as usize,
            ),
            configs,
        };
        scratch.apply(&record);
        records.push(record);
        if !is_internal {
            held += spec.num_partitions as u64;
        }
        outcomes.push(CreateTopicOutcome {
            error_code: 0,
            error_message: None,
            topic_id,
        });
    }
    if validate_only || records.is_empty() {
        return outcomes;
    }
    if let Err(e) = commit(shard, records).await {
        tracing::error!(error = %e, "metadata commit failed");
        for o in outcomes.iter_mut().filter(|o| o.error_code == 0) {
            *o = outcome(ErrorCode::KafkaStorageError, e.to_string());
        }
    }
    outcomes
}

/// AlterConfigs and IncrementalAlterConfigs of topics, in Kafka's order of
/// checks: the name, the topic's existence, then the altered set as
/// CreateTopics checks a new topic's. A change that leaves the overrides
/// as they are writes nothing.
async fn alter_topic_configs(
    shard: &Rc<Shard>,
    topics: Vec<(String, ConfigAlteration)>,
    validate_only: bool,
) -> Vec<AdminOutcome> {
    let image = shard.image();
    let mut outcomes = Vec::with_capacity(topics.len());
    let mut records = Vec::new();
    for (name, alteration) in topics {
        if name.is_empty() {
            outcomes.push((
                ErrorCode::InvalidRequest.code(),
                Some("Default topic resources are not allowed.".to_string()),
            ));
            continue;
        }
        if let Err(message) = validate_topic_name(&name) {
            outcomes.push((ErrorCode::InvalidTopicException.code(), Some(message)));
            continue;
        }
        let Some(topic) = image.topic(&name) else {
            outcomes.push((
                ErrorCode::UnknownTopicOrPartition.code(),
                Some(format!("The topic '{name}' does not exist.")),
            ));
            continue;
        };
        match topic.configs.altered(&alteration, &shard.broker_defaults()) {
            Err(message) => outcomes.push((ErrorCode::InvalidConfig.code(), Some(message))),
            Ok(configs) => {
                if configs != topic.configs {
                    records.push(MetadataRecord::AlterTopicConfigs {
                        name,
                        topic_id: topic.topic_id,
                        configs: configs.overrides().clone(),
                    });
                }
                outcomes.push((0, None));
            }
        }
    }
    if !validate_only {
        commit_outcomes(shard, records, &mut outcomes).await;
    }
    outcomes
}

/// Changes dynamic broker configs: each resource's layer after its change
/// must give this node valid connection limits and broker values of topic
/// configs together with the other layer and the command line (Kafka's
/// `DynamicBrokerConfig.validate`),
/// else INVALID_REQUEST with Kafka's message. Resources are applied in
/// order, so a later one is checked over an earlier one's change.
async fn alter_broker_configs(
    shard: &Rc<Shard>,
    resources: Vec<(Option<i32>, ConfigAlteration)>,
    validate_only: bool,
) -> Vec<AdminOutcome> {
    use crate::config::dynamic::{
        altered_layer, elr_refusal, refuse_zero_limits, ConnectionLimits,
    };
    let image = shard.image();
    let elr = crate::cluster::features::elr_enabled(&image.features);
    let mut layers = (*image.broker_configs).clone();
    let mut outcomes = Vec::with_capacity(resources.len());
    let mut records = Vec::new();
    for (broker, alteration) in resources {
        let current = layers.layer(broker).cloned().unwrap_or_default();
        let next = altered_layer(&current, &alteration);
        let mut trial = layers.clone();
        trial.set_layer(broker, next.clone());
        let node = shard.config.node_id;
        let value = |name: &str| shard.config.value_in_force(&trial, name);
        let checked = next
            .iter()
            .try_for_each(|(name, value)| crate::config::dynamic::check_value(name, value))
            // KafkaConfig's requirements, before the reconfigurables'.
            .and_then(|_| crate::config::dynamic::check_cleaner_memory(&value))
            .and_then(|_| {
                // A limit of 0 set by this change (a listener this broker
                // does not have is not checked, as in Kafka).
                let listeners: Vec<String> = shard
                    .config
                    .listeners
                    .iter()
                    .map(|l| l.security_protocol.name().to_ascii_lowercase())
                    .collect();
                refuse_zero_limits(&alteration, &listeners)
            })
            .and_then(|_| ConnectionLimits::from_values(&value, true))
            .and_then(|_| {
                crate::config::dynamic::defaults_with(&shard.config.broker_defaults, &trial, node)
            });
        if let Err(message) = checked {
            outcomes.push((ErrorCode::InvalidRequest.code(), Some(message)));
            continue;
        }
        // The listeners' new stores are read and checked as Kafka's SSL
        // factories validate a reconfiguration, in Kafka's wrapping of
        // the reason.
        if let Err(why) = crate::server::tls::check(shard, &layers, &trial).await {
            tracing::info!(error = %why, "dynamic SSL configs refused");
            outcomes.push((
                ErrorCode::InvalidRequest.code(),
                Some(format!("Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic config update of SSLFactory failed: {why} for configuration Invalid dynamic configuration")),
            ));
            continue;
        }
        // The log cleaner, Kafka's last reconfigurable, against the
        // threads in force (not an earlier resource's of this request).
        let in_force = |name: &str| shard.config.value_in_force(&image.broker_configs, name);
        if let Err(message) = crate::config::dynamic::check_cleaner_threads(&in_force, &value) {
            outcomes.push((ErrorCode::InvalidRequest.code(), Some(message)));
            continue;
        }
        // After the values' checks (the broker's, in Kafka), as Kafka's
        // controller checks it.
        if let Some(message) = elr
            .then(|| elr_refusal(broker, &alteration, &current, &next))
            .flatten()
        {
            outcomes.push((ErrorCode::InvalidConfig.code(), Some(message.to_string())));
            continue;
        }
        outcomes.push((0, None));
        // Written even unchanged, as Kafka's controller writes a broker's
        // configs: given again, a store whose file was modified is read.
        layers = trial;
        records.push(MetadataRecord::BrokerConfigs {
            broker,
            configs: next,
        });
    }
    if !validate_only && !records.is_empty() {
        // The overrides' hosts are resolved here, before the change is
        // committed, rather than by the shard applying it.
        let limits = crate::server::admission::limits_in_force(&shard.config, &layers);
        let hosts = limits.overrides.into_iter().map(|(host, _)| host);
        let resolved = crate::server::hosts::resolve_all(hosts).await;
        shard.connection_counts.overrides.checked.keep(resolved);
        commit_outcomes(shard, records, &mut outcomes).await;
        shard
            .connection_counts
            .overrides
            .checked
            .keep(Default::default());
    }
    outcomes
}

/// Changes group configs: each group's configs after its change are
/// checked together (`config::group_config::altered`), else INVALID_CONFIG
/// with Kafka's message.
async fn alter_group_configs(
    shard: &Rc<Shard>,
    resources: Vec<(String, ConfigAlteration)>,
    validate_only: bool,
) -> Vec<AdminOutcome> {
    let image = shard.image();
    let bounds = shard.config.groups.group_bounds();
    alter_named_configs(
        shard,
        resources,
        validate_only,
        |group| image.group_configs.get(group).map(|g| &g.values),
        |group, current, alteration| {
            crate::config::group_config::altered(group, current, alteration, &bounds)
        },
        |group, configs| MetadataRecord::GroupConfigs { group, configs },
    )
    .await
}

/// Changes client-metrics subscriptions: each one's configs after its
/// change are checked together (`config::client_metrics::altered`).
async fn alter_client_metrics_configs(
    shard: &Rc<Shard>,
    resources: Vec<(String, ConfigAlteration)>,
    validate_only: bool,
) -> Vec<AdminOutcome> {
    let image = shard.image();
    alter_named_configs(
        shard,
        resources,
        validate_only,
        |name| image.client_metrics.get(name),
        crate::config::client_metrics::altered,
        |name, configs| MetadataRecord::ClientMetricsConfigs { name, configs },
    )
    .await
}

/// Changes the configs of named resources (groups, subscriptions): each
/// one's `current` configs after its change, `altered` (checked), become a
/// `record` when they differ; the outcome of each in request order.
async fn alter_named_configs<'a>(
    shard: &Rc<Shard>,
    resources: Vec<(String, ConfigAlteration)>,
    validate_only: bool,
    current: impl Fn(&str) -> Option<&'a BTreeMap<String, String>>,
    altered: impl Fn(
        &str,
        &BTreeMap<String, String>,
        &ConfigAlteration,
    ) -> Result<BTreeMap<String, String>, (ErrorCode, String)>,
    record: impl Fn(String, BTreeMap<String, String>) -> MetadataRecord,
) -> Vec<AdminOutcome> {
    let mut outcomes = Vec::with_capacity(resources.len());
    let mut records = Vec::new();
    let empty = BTreeMap::new();
    for (name, alteration) in resources {
        let current = current(&name).unwrap_or(&empty);
        match altered(&name, current, &alteration) {
            Err((error, message)) => outcomes.push((error.code(), Some(message))),
            Ok(configs) => {
                if &configs != current {
                    records.push(record(name, configs));
                }
                outcomes.push((0, None));
            }
        }
    }
    if !validate_only {
        commit_outcomes(shard, records, &mut outcomes).await;
    }
    outcomes
}

/// UpdateFeatures, as Kafka's `FeatureControlManager.updateFeatures`: every
/// update is checked against the current levels, in request order; the
/// first refusal fails them all (INVALID_UPDATE_VERSION with Kafka's
/// message), else the changed levels are committed together.
async fn update_features(
    shard: &Rc<Shard>,
    updates: Vec<(String, i16, i8)>,
    validate_only: bool,
) -> Result<(), (ErrorCode, String)> {
    let image = shard.image();
    // Kafka reads the updates into a map: a feature named twice takes its
    // last update.
    let mut updates = updates;
    let mut seen = HashSet::new();
    updates.reverse();
    updates.retain(|(name, _, _)| seen.insert(name.clone()));
    updates.reverse();
    let mut records = Vec::new();
    let mut enables_elr = false;
    for (name, level, upgrade_type) in updates {
        enables_elr |= name == crate::cluster::features::ELR_VERSION && level >= 1;
        let checked = crate::cluster::features::check_update(
            &image.features,
            shard.config.node_id,
            &name,
            level,
            upgrade_type,
        );
        match checked {
            Err(message) => {
                return Err((
                    ErrorCode::InvalidUpdateVersion,
                    format!(
                        "The update failed for all features since the following feature had \
                         an error: {message}"
                    ),
                ))
            }
            Ok(Some((name, level))) => records.push(MetadataRecord::FeatureLevel { name, level }),
            Ok(None) => {}
        }
    }
    if enables_elr {
        // Ahead of the level, in the same commit, as Kafka writes them.
        let mut safety = elr_safety_records(&shard.config, &image.broker_configs);
        safety.append(&mut records);
        records = safety;
    }
    if validate_only || records.is_empty() {
        return Ok(());
    }
    tracing::info!(?records, "changing feature levels");
    commit(shard, records).await.map_err(|e| {
        tracing::error!(error = %e, "metadata commit failed");
        (ErrorCode::KafkaStorageError, e.to_string())
    })
}

/// The broker-config records that make ELR safe to turn on
/// (`config::dynamic::elr_safety_layers`), with this node's command-line
/// `min.insync.replicas`.
pub fn elr_safety_records(
    config: &crate::config::BrokerConfig,
    configs: &crate::config::dynamic::DynamicBrokerConfigs,
) -> Vec<MetadataRecord> {
    let static_value = config
        .static_value(crate::config::dynamic::MIN_INSYNC_REPLICAS)
        .unwrap_or_else(|| "1".to_string());
    crate::config::dynamic::elr_safety_layers(configs, &static_value)
        .into_iter()
        .map(|(broker, configs)| MetadataRecord::BrokerConfigs { broker, configs })
        .collect()
}

/// Commits `records` (if any); when that fails, every successful outcome
/// becomes KAFKA_STORAGE_ERROR.
async fn commit_outcomes(
    shard: &Rc<Shard>,
    records: Vec<MetadataRecord>,
    outcomes: &mut [AdminOutcome],
) {
    if records.is_empty() {
        return;
    }
    if let Err(e) = commit(shard, records).await {
        tracing::error!(error = %e, "metadata commit failed");
        for o in outcomes.iter_mut().filter(|o| o.0 == 0) {
            *o = (ErrorCode::KafkaStorageError.code(), Some(e.to_string()));
        }
    }
}

/// Checks a CreatePartitions assignment as Kafka's controller does, for a
/// topic of replication factor 1 on this single node.
fn check_assignments(shard: &Shard, added: i32, assignments: &[Vec<i32>]) -> Result<(), String> {
    if assignments.len() != added as usize {
        return Err(format!(
            "Attempted to add {added} additional partition(s), but only {} assignment(s) were specified.",
            assignments.len()
        ));
    }
    for replicas in assignments {
        if replicas.is_empty() {
            return Err("The manual partition assignment includes an empty replica list.".into());
        }
        let mut seen = HashSet::new();
        if let Some(broker) = replicas.iter().find(|&&broker| !seen.insert(broker)) {
            return Err(format!(
                "The manual partition assignment includes the broker {broker} more than once."
            ));
        }
        for &broker in replicas {
            if broker != shard.config.node_id {
                return Err(format!(
                    "The manual partition assignment includes broker {broker}, but no such broker is registered."
                ));
            }
        }
    }
    Ok(())
}

/// CreatePartitions: adds partitions at the end of each topic, placed on
/// the least-loaded shards, in Kafka's order of checks. The internal topics
/// are refused: a group's or a transactional id's partition is its hash
/// modulo the partition count, so more partitions would move them away
/// from their state.
async fn create_partitions(
    shard: &Rc<Shard>,
    topics: Vec<CreatePartitionsSpec>,
    validate_only: bool,
    charge: &mut MutationCharge<'_>,
) -> Vec<AdminOutcome> {
    let budget = partitions_within_open_files(
        shard.config.open_files_max,
        shard.config.topic_fds_per_partition,
    );
    let mut scratch = (*shard.image()).clone();
    let internal = internal_topics(shard);
    let mut held = partitions_held(&scratch, &internal);
    let mut outcomes = Vec::with_capacity(topics.len());
    let mut records = Vec::new();
    let refuse = |error: ErrorCode, message: String| (error.code(), Some(message));
    for spec in topics {
        let Some(topic) = scratch.topic(&spec.name).cloned() else {
            outcomes.push((ErrorCode::UnknownTopicOrPartition.code(), None));
            continue;
        };
        let current = topic.partition_shards.len() as i32;
        if spec.count < current {
            outcomes.push(refuse(
                ErrorCode::InvalidPartitions,
                format!(
                    "The topic {} currently has {current} partition(s); {} would not be an increase.",
                    spec.name, spec.count
                ),
            ));
            continue;
        }
        if spec.count == current {
            outcomes.push(refuse(
                ErrorCode::InvalidPartitions,
                format!("Topic already has {current} partition(s)."),
            ));
            continue;
        }
        let added = spec.count - current;
        if let Some(assignments) = &spec.assignments {
            if let Err(message) = check_assignments(shard, added, assignments) {
                outcomes.push(refuse(ErrorCode::InvalidReplicaAssignment, message));
                continue;
            }
        }
        if topic.is_internal() {
            outcomes.push(refuse(
                ErrorCode::InvalidRequest,
                format!(
                    "Partitions cannot be added to the internal topic {}: its records are placed by the partition count.",
                    spec.name
                ),
            ));
            continue;
        }
        if spec.count > TOPIC_PARTITIONS_MAX {
            outcomes.push(refuse(
                ErrorCode::InvalidPartitions,
                format!(
                    "A topic may have at most {TOPIC_PARTITIONS_MAX} partitions on this broker."
                ),
            ));
            continue;
        }
        if let Some(budget) = budget {
            if held + added as u64 > budget {
                outcomes.push(over_budget(shard, i64::from(added), held, budget));
                continue;
            }
        }
        if !charge.record(added as usize) {
            outcomes.push(THROTTLED);
            continue;
        }
        let record = MetadataRecord::CreatePartitions {
            name: spec.name.clone(),
            topic_id: topic.topic_id,
            partition_shards: place_partitions(&scratch, shard.nr_shards, added as usize),
        };
        scratch.apply(&record);
        records.push(record);
        held += added as u64;
        outcomes.push((0, None));
    }
    if !validate_only {
        commit_outcomes(shard, records, &mut outcomes).await;
    }
    outcomes
}

async fn delete_topics(
    shard: &Rc<Shard>,
    names: Vec<String>,
    charge: &mut MutationCharge<'_>,
) -> Vec<(i16, Uuid)> {
    let image = shard.image();
    let mut results = Vec::with_capacity(names.len());
    let mut records = Vec::new();
    // A name given twice is answered as the first time.
    let mut seen: HashMap<String, (i16, Uuid)> = HashMap::new();
    for name in names {
        if let Some(result) = seen.get(&name) {
            results.push(*result);
            continue;
        }
        let result = match image.topic(&name) {
            Some(topic) if !charge.record(topic.partition_shards.len()) => {
                (THROTTLED.0, Uuid::nil())
            }
            Some(topic) => {
                records.push(MetadataRecord::DeleteTopic {
                    name: name.clone(),
                    topic_id: topic.topic_id,
                });
                (0, topic.topic_id)
            }
            None => (ErrorCode::UnknownTopicOrPartition.code(), Uuid::nil()),
        };
        results.push(result);
        seen.insert(name, result);
    }
    if !records.is_empty() {
        if let Err(e) = commit(shard, records).await {
            tracing::error!(error = %e, "metadata commit failed");
            for r in results.iter_mut().filter(|r| r.0 == 0) {
                r.0 = ErrorCode::KafkaStorageError.code();
            }
        }
    }
    results
}

/// Name of the internal topic holding group metadata and committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Creates `__consumer_offsets` if it does not exist yet, with
/// `offsets.topic.num.partitions` partitions, compacted, as Kafka does on the
/// first group lookup.
///
/// # Errors
/// When the controller cannot be reached or refuses.
pub async fn ensure_offsets_topic(shard: &Rc<Shard>) -> anyhow::Result<()> {
    let groups = &shard.config.groups;
    ensure_internal_topic(
        shard,
        OFFSETS_TOPIC,
        groups.offsets_topic_num_partitions,
        groups.offsets_topic_segment_bytes,
    )
    .await
}

/// Creates `__transaction_state` if it does not exist yet, with
/// `transaction.state.log.num.partitions` partitions, compacted, as Kafka
/// does on the first transactional lookup.
///
/// # Errors
/// When the controller cannot be reached or refuses.
pub async fn ensure_txn_state_topic(shard: &Rc<Shard>) -> anyhow::Result<()> {
    let txns = &shard.config.txns;
    ensure_internal_topic(
        shard,
        crate::txn::TXN_STATE_TOPIC,
        txns.transaction_state_log_num_partitions,
        txns.transaction_state_log_segment_bytes,
    )
    .await
}

async fn ensure_internal_topic(
    shard: &Rc<Shard>,
    name: &str,
    num_partitions: i32,
    segment_bytes: i32,
) -> anyhow::Result<()> {
    if shard.image().topic(name).is_some() {
        return Ok(());
    }
    let spec = CreateTopicSpec {
        name: name.to_string(),
        num_partitions,
        replication_factor: 1,
        configs: vec![
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("compression.type".to_string(), "producer".to_string()),
            ("segment.bytes".to_string(), segment_bytes.to_string()),
        ],
    };
    let request = ShardRequest::Controller(ControllerRequest::CreateTopics {
        quota: None,
        topics: vec![spec],
        validate_only: false,
    });
    let reply = shard.call(CONTROLLER_SHARD, request).await?.await?;
    match reply {
        ShardReply::Controller(ControllerReply::CreateTopics(outcomes, _)) => {
            match outcomes.first() {
                Some(o)
                    if o.error_code == 0
                        || o.error_code == ErrorCode::TopicAlreadyExists.code() =>
                {
                    Ok(())
                }
                Some(o) => anyhow::bail!(
                    "cannot create {name}: error {} {:?}",
                    o.error_code,
                    o.error_message
                ),
                None => anyhow::bail!("cannot create {name}: no answer"),
            }
        }
        other => anyhow::bail!("cannot create {name}: unexpected reply {other:?}"),
    }
}

/// Makes records durable in the metadata log, then applies them on every
/// shard and waits until all have.
///
/// # Errors
/// When the metadata log cannot be written.
pub async fn commit(shard: &Rc<Shard>, records: Vec<MetadataRecord>) -> anyhow::Result<()> {
    metadata_log::append(shard.config.data_dir.join("meta"), records.clone()).await?;
    let mut completions = Vec::with_capacity(shard.nr_shards);
    for target in 0..shard.nr_shards {
        completions.push(
            shard
                .call(target, ShardRequest::Apply(records.clone()))
                .await?,
        );
    }
    for completion in completions {
        completion.await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::partitions_within_open_files;

    #[test]
    fn the_partition_budget_leaves_a_reserve_of_descriptors() {
        // 1024 kept out of a large limit, a quarter of a small one.
        assert_eq!(partitions_within_open_files(20_000, 1), Some(18_976));
        assert_eq!(partitions_within_open_files(20_000, 5), Some(3_795));
        assert_eq!(partitions_within_open_files(1024, 1), Some(768));
        assert_eq!(partitions_within_open_files(1, 1), Some(1));
        assert_eq!(partitions_within_open_files(3, 5), Some(0));
        // No budget without a limit or without descriptors per partition.
        assert_eq!(partitions_within_open_files(0, 1), None);
        assert_eq!(partitions_within_open_files(20_000, 0), None);
    }
}
