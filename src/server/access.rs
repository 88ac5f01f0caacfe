//! What a request's caller may do: the connection's principal and host
//! checked against the ACLs of the shard's current image by the configured
//! authorizer (see `security::acl`). Without an authorizer everything is
//! allowed. Handlers ask before they act, as Kafka's `AuthHelper` does.

use std::rc::Rc;

use crate::protocol::ErrorCode;
use crate::security::acl::{
    AclOperation, AclSet, AuthorizerConfig, Caller, ResourceType, ANONYMOUS, CLUSTER_NAME,
};
use crate::shard::Shard;

/// One request's caller and the ACLs it is judged by. Cheap to clone, and
/// made of this shard's values only.
#[derive(Clone)]
pub struct Access {
    caller: Caller,
    authorizer: Rc<AuthorizerConfig>,
    acls: Rc<AclSet>,
    /// Whether the connection may ask for delegation tokens: SASL, or TLS
    /// with a client certificate (Kafka's `allowTokenRequests`).
    token_requests_allowed: bool,
}

impl Access {
    /// The caller of a request on `shard`, judged by the ACLs now in its
    /// image (none are read without an authorizer).
    pub fn new(shard: &Shard, caller: &Caller) -> Self {
        Access {
            caller: caller.clone(),
            authorizer: shard.authorizer.clone(),
            acls: if shard.authorizer.enabled {
                shard.image().acls.clone()
            } else {
                Rc::default()
            },
            token_requests_allowed: false,
        }
    }

    /// This access, on a connection that may (or may not) ask for
    /// delegation tokens.
    pub fn with_token_requests(mut self, allowed: bool) -> Self {
        self.token_requests_allowed = allowed;
        self
    }

    /// Whether the connection may ask for delegation tokens: SASL, or TLS
    /// with a client certificate; not PLAINTEXT nor one-way TLS.
    pub fn token_requests_allowed(&self) -> bool {
        self.token_requests_allowed
    }

    /// The caller of a connection: its SASL user, or User:ANONYMOUS.
    pub fn caller(user: Option<&str>, peer: Option<std::net::SocketAddr>) -> Caller {
        Caller {
            principal: match user {
                Some(name) => format!("User:{name}").into(),
                None => ANONYMOUS.into(),
            },
            host: peer
                .map(|p| crate::security::acl::java_host_address(p.ip()))
                .unwrap_or_default()
                .into(),
        }
    }

    /// The caller's principal and host, to be judged on another shard.
    pub fn caller_identity(&self) -> (String, String) {
        (
            self.caller.principal.to_string(),
            self.caller.host.to_string(),
        )
    }

    /// True when an authorizer is configured.
    pub fn enabled(&self) -> bool {
        self.authorizer.enabled
    }

    /// May the caller do `operation` on the resource? (Always, without an
    /// authorizer.)
    pub fn allows(&self, operation: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        self.authorizer
            .authorize(&self.acls, &self.caller, operation, resource_type, name)
    }

    /// May the caller do `operation` on topic `name`?
    pub fn topic(&self, operation: AclOperation, name: &str) -> bool {
        self.allows(operation, ResourceType::Topic, name)
    }

    /// May the caller do `operation` on group `name`?
    pub fn group(&self, operation: AclOperation, name: &str) -> bool {
        self.allows(operation, ResourceType::Group, name)
    }

    /// May the caller do `operation` on transactional id `id`?
    pub fn transactional_id(&self, operation: AclOperation, id: &str) -> bool {
        self.allows(operation, ResourceType::TransactionalId, id)
    }

    /// May the caller do `operation` on the cluster?
    pub fn cluster(&self, operation: AclOperation) -> bool {
        self.allows(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// May the caller do `operation` on some resource of the type (Kafka's
    /// `authorizeByResourceType`)?
    pub fn any_of_type(&self, operation: AclOperation, resource_type: ResourceType) -> bool {
        self.authorizer
            .authorize_any(&self.acls, &self.caller, operation, resource_type)
    }

    /// The refusal of a request that writes offsets in a transaction
    /// (AddOffsetsToTxn, TxnOffsetCommit): WRITE on the transactional id,
    /// then READ on the group, asked in Kafka's order.
    pub fn transaction_offsets_refusal(
        &self,
        transactional_id: &str,
        group: &str,
    ) -> Option<ErrorCode> {
        if !self.transactional_id(AclOperation::Write, transactional_id) {
            Some(ErrorCode::TransactionalIdAuthorizationFailed)
        } else if !self.group(AclOperation::Read, group) {
            Some(ErrorCode::GroupAuthorizationFailed)
        } else {
            None
        }
    }

    /// The authorized-operations bit field of a resource: every operation
    /// of its type without an authorizer.
    pub fn operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        crate::security::acl::operation_bits(
            resource_type
                .supported_operations()
                .iter()
                .filter(|&&op| self.allows(op, resource_type, name)),
        )
    }

    /// The cluster's authorized-operations bit field as Metadata and
    /// DescribeCluster give it: every cluster operation allowed when the
    /// caller may DESCRIBE the cluster, else 0 (Kafka's
    /// `AuthHelper.authorizedOperations` guarded by DESCRIBE).
    pub fn cluster_operations(&self) -> i32 {
        if self.cluster(AclOperation::Describe) {
            self.operations(ResourceType::Cluster, CLUSTER_NAME)
        } else {
            0
        }
    }

    /// The ACLs judged by.
    pub fn acls(&self) -> &AclSet {
        &self.acls
    }
}

/// Kafka's message when a cluster operation is refused
/// (`AuthHelper.authorizeClusterOperation`); Kafka names its request object,
/// we name the API.
pub fn cluster_refusal(api: kafka_protocol::messages::ApiKey, operation: &str) -> String {
    format!("Request {api:?} needs {operation} permission.")
}

/// Kafka's own message of an authorization error (`Errors.message()`), as
/// answered where Kafka copies it into a response.
pub fn refusal_message(error: ErrorCode) -> &'static str {
    match error {
        ErrorCode::TopicAuthorizationFailed => "Topic authorization failed.",
        ErrorCode::GroupAuthorizationFailed => "Group authorization failed.",
        ErrorCode::ClusterAuthorizationFailed => "Cluster authorization failed.",
        ErrorCode::TransactionalIdAuthorizationFailed => "Transactional Id authorization failed.",
        _ => "",
    }
}
