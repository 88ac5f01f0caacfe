//! What a request's caller may do: the connection's principal and host
//! checked against the ACLs of the shard's current image by the configured
//! authorizer (see `security::acl`). Without an authorizer everything is
//! allowed. Handlers ask before they act, as Kafka's `AuthHelper` does.

use std::rc::Rc;
use std::sync::Arc;

use crate::config::BrokerConfig;
use crate::protocol::ErrorCode;
use crate::security::acl::{AclOperation, AclSet, Caller, ResourceType, ANONYMOUS, CLUSTER_NAME};
use crate::shard::Shard;

/// One request's caller and the ACLs it is judged by. Cheap to clone.
#[derive(Clone)]
pub struct Access {
    caller: Caller,
    config: Arc<BrokerConfig>,
    acls: Rc<AclSet>,
    /// Allowed everything whatever the ACLs say.
    all: bool,
}

impl Access {
    /// The caller of a request on `shard`, judged by the ACLs now in its
    /// image.
    pub fn new(shard: &Shard, caller: &Caller) -> Self {
        Access {
            caller: caller.clone(),
            config: shard.config.clone(),
            acls: if shard.config.authorizer.enabled {
                shard.image().acls.clone()
            } else {
                Rc::default()
            },
            all: !shard.config.authorizer.enabled,
        }
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

    /// Everything allowed, for requests the broker makes of itself and for
    /// unit tests.
    pub fn everything(shard: &Shard) -> Self {
        Access {
            caller: Caller {
                principal: ANONYMOUS.into(),
                host: "".into(),
            },
            config: shard.config.clone(),
            acls: Rc::default(),
            all: true,
        }
    }

    /// True when an authorizer is configured.
    pub fn enabled(&self) -> bool {
        self.config.authorizer.enabled
    }

    /// May the caller do `operation` on the resource?
    pub fn allows(&self, operation: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        self.all
            || self.config.authorizer.authorize(
                &self.acls,
                &self.caller,
                operation,
                resource_type,
                name,
            )
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
        self.all
            || self.config.authorizer.authorize_any(
                &self.acls,
                &self.caller,
                operation,
                resource_type,
            )
    }

    /// The authorized-operations bit field of a resource: every operation
    /// of its type without an authorizer.
    pub fn operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|&&op| self.allows(op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
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
