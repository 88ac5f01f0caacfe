// The Java Kafka client (kafka-clients 4.x, from Maven Central) against
// ringbroker, run by tests/python/test_java_client.py as a single-file
// program: `java -cp <classpath> JavaClient.java <mode> <bootstrap> <topic>`.
// With JAVA_CLIENT_SASL=<mechanism>:<user>:<password> in the environment,
// the admin client of every mode authenticates with SASL (SCRAM, PLAIN, or
// OAUTHBEARER with the client id and secret of the OIDC token endpoint
// JAVA_CLIENT_OAUTH_TOKEN_URL).
// Prints one JSON object on stdout with what it saw; the Python test
// asserts on it. Exits non-zero on any client exception.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClient {
    static final int PARTITIONS = 2;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String bootstrap = args[1];
        String topic = args[2];
        if (!List.of("delegation-tokens", "token-login", "token-sweep", "resume").contains(mode)) {
            try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
                admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
            }
        }
        switch (mode) {
            case "idempotent-defaults" -> idempotentDefaults(bootstrap, topic);
            case "recreated-topic" -> recreatedTopic(bootstrap, topic);
            case "elr" -> elr(bootstrap, topic);
            case "elr-kept" -> {
                // What was kept, then the cluster-level value back at 1 for
                // the tests after.
                System.out.println(elrKept(bootstrap, topic));
                try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
                    admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.BROKER, ""),
                            List.of(new AlterConfigOp(new ConfigEntry("min.insync.replicas", "1"), AlterConfigOp.OpType.SET))))
                            .all().get();
                }
            }
            case "transactions" -> transactions(bootstrap, topic);
            case "transaction-version" -> transactionVersion(bootstrap, topic);
            case "group-version" -> groupVersion(bootstrap, topic);
            case "share-groups-off" -> shareGroupsOff(bootstrap, topic);
            case "broker-loggers" -> brokerLoggers(bootstrap);
            case "client-metrics" -> clientMetrics(bootstrap, topic);
            case "list-transactions-pattern" -> listTransactionsPattern(bootstrap, topic);
            case "log-dirs" -> logDirs(bootstrap, topic);
            case "delegation-tokens" -> delegationTokens(bootstrap);
            case "token-life" -> tokenLife(bootstrap, topic);
            case "token-login" -> tokenLogin(bootstrap, topic);
            case "token-sweep" -> tokenSweep(bootstrap);
            case "client-metrics-kept" -> System.out.println(clientMetricsKept(bootstrap, topic));
            case "copier" -> copier(bootstrap, topic);
            case "admin" -> adminCalls(bootstrap, topic);
            case "validate" -> validatePositions(bootstrap, topic);
            case "resume" -> resume(bootstrap, topic, Integer.parseInt(System.getenv("JAVA_CLIENT_COUNT")));
            case "scram" -> scram(bootstrap, topic);
            case "plain" -> plain(bootstrap, topic);
            case "acls" -> acls(bootstrap, topic);
            case "quotas" -> quotas(bootstrap, topic);
            case "reauth" -> reauth(bootstrap, topic);
            case "connection-limits" -> connectionLimits(bootstrap);
            case "consumer-protocol" -> consumerProtocol(bootstrap, topic);
            case "migration" -> migration(bootstrap, topic);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    /**
     * Changing a topic as kafka-delete-records, kafka-topics --alter and
     * kafka-configs --alter do: DeleteRecords (and one past the high
     * watermark), CreatePartitions, IncrementalAlterConfigs; and
     * DescribeLogDirs, as kafka-log-dirs does.
     */
    static void adminCalls(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
            }
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(12)))
                    .lowWatermarks().get(tp).get().lowWatermark();
            long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()))
                    .partitionResult(tp).get().offset();
            String beyond = "none";
            try {
                admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(21))).all().get();
            } catch (java.util.concurrent.ExecutionException e) {
                beyond = e.getCause().getClass().getSimpleName();
            }
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(PARTITIONS + 2))).all().get();
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get()
                    .get(topic).partitions().size();
            // Two partitions per DescribeTopicPartitions answer: the client
            // follows the cursor to the end.
            var paged = admin.describeTopics(List.of(topic),
                    new org.apache.kafka.clients.admin.DescribeTopicsOptions().partitionSizeLimitPerResponse(2))
                    .allTopicNames().get().get(topic).partitions().stream()
                    .map(p -> p.partition() + "@" + p.leader().id())
                    .collect(Collectors.joining(","));
            var elected = admin.electLeaders(org.apache.kafka.common.ElectionType.PREFERRED, Set.of(tp))
                    .partitions().get().get(tp);
            String election = elected.map(e -> e.getClass().getSimpleName()).orElse("elected");
            var cluster = admin.describeCluster(
                    new org.apache.kafka.clients.admin.DescribeClusterOptions().includeAuthorizedOperations(true));
            boolean controllerIsNode = cluster.controller().get().id() == cluster.nodes().get().iterator().next().id();
            int clusterOperations = cluster.authorizedOperations().get().size();
            // kafka-reassign-partitions: onto the node itself (done at once),
            // onto a broker that does not exist, and a cancel.
            int node = cluster.nodes().get().iterator().next().id();
            List<String> reassignments = new ArrayList<>();
            for (Optional<NewPartitionReassignment> target : List.of(
                    Optional.of(new NewPartitionReassignment(List.of(node))),
                    Optional.of(new NewPartitionReassignment(List.of(node, node + 5))),
                    Optional.<NewPartitionReassignment>empty())) {
                try {
                    admin.alterPartitionReassignments(Map.of(tp, target)).all().get();
                    reassignments.add("done");
                } catch (java.util.concurrent.ExecutionException e) {
                    reassignments.add(e.getCause().getClass().getSimpleName());
                }
            }
            int ongoing = admin.listPartitionReassignments().reassignments().get().size();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            AlterConfigOp set = new AlterConfigOp(
                    new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(set))).all().get();
            String retention = admin.describeConfigs(List.of(resource)).all().get()
                    .get(resource).get("retention.ms").value();
            int broker = admin.describeCluster().nodes().get().iterator().next().id();
            var dirs = admin.describeLogDirs(List.of(broker)).allDescriptions().get().get(broker);
            long size = dirs.size() == 1
                    ? dirs.values().iterator().next().replicaInfos().get(tp).size()
                    : -1;
            List<String> values = new ArrayList<>();
            Properties consumerProps = new Properties();
            consumerProps.put("bootstrap.servers", bootstrap);
            consumerProps.put("auto.offset.reset", "earliest");
            try (KafkaConsumer<String, String> consumer =
                    new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer())) {
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long deadline = System.currentTimeMillis() + 30_000;
                while (values.size() < 8 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                        values.add(record.offset() + ":" + record.value());
                    }
                }
            }
            System.out.printf(
                    "{\"low_watermark\": %d, \"earliest\": %d, \"beyond\": \"%s\", \"partitions\": %d, "
                            + "\"retention_ms\": \"%s\", \"read\": \"%s\", \"log_dirs\": %d, \"size\": %d, "
                            + "\"paged\": \"%s\", \"election\": \"%s\", \"controller_is_node\": %b, "
                            + "\"cluster_operations\": %d, \"reassignments\": \"%s\", \"ongoing\": %d}%n",
                    low, earliest, beyond, partitions, retention, String.join(",", values), dirs.size(), size,
                    paged, election, controllerIsNode, clusterOperations, String.join(",", reassignments), ongoing);
        }
    }

    /**
     * A position carrying a leader epoch is validated with
     * OffsetForLeaderEpoch before the consumer fetches (KIP-320): one past
     * the end of that epoch is a LogTruncationException naming where the
     * epoch ends; one inside the log reads on from there.
     */
    static void validatePositions(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
            }
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties consumerProps = new Properties();
        consumerProps.put("bootstrap.servers", bootstrap);
        consumerProps.put("auto.offset.reset", "none");
        String truncation = "none";
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, new org.apache.kafka.clients.consumer.OffsetAndMetadata(100, java.util.Optional.of(0), ""));
            long deadline = System.currentTimeMillis() + 30_000;
            while (truncation.equals("none") && System.currentTimeMillis() < deadline) {
                try {
                    consumer.poll(Duration.ofMillis(200));
                } catch (org.apache.kafka.clients.consumer.LogTruncationException e) {
                    var divergent = e.divergentOffsets().get(tp);
                    truncation = divergent.offset() + "@" + divergent.leaderEpoch().orElse(-1);
                }
            }
            consumer.seek(tp, new org.apache.kafka.clients.consumer.OffsetAndMetadata(3, java.util.Optional.of(0), ""));
            while (values.size() < 2 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.offset() + ":" + record.value() + "@" + record.leaderEpoch().orElse(-1));
                }
            }
        }
        System.out.printf("{\"truncation\": \"%s\", \"read\": \"%s\"}%n", truncation, String.join(",", values));
    }

    /**
     * A member of group `<topic>-resume` (auto.offset.reset=earliest)
     * reads `count` records of `topic` within 30 s, starting from the
     * group's committed offsets, which it validates first when they carry
     * a leader epoch; commits; prints the offsets read, each with its
     * record's leader epoch.
     */
    static void resume(String bootstrap, String topic, int count) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", topic + "-resume");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        List<String> read = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (read.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    read.add(record.offset() + "@" + record.leaderEpoch().orElse(-1));
                }
            }
            consumer.commitSync();
        }
        System.out.printf("{\"read\": \"%s\"}%n", String.join(",", read));
    }

    /**
     * `config` with the SASL settings JAVA_CLIENT_SASL asks for, if any, over
     * TLS trusting the PEM CA file JAVA_CLIENT_TLS names, if any.
     */
    static Map<String, Object> withSasl(Map<String, Object> config) {
        String sasl = System.getenv("JAVA_CLIENT_SASL");
        Map<String, Object> out = config;
        if (sasl != null) {
            String[] parts = sasl.split(":", 3);
            out = withScram(config, parts[0], parts[1], parts[2]);
        }
        String tls = System.getenv("JAVA_CLIENT_TLS");
        if (tls != null) {
            out = new HashMap<>(out);
            out.put("security.protocol", sasl == null ? "SSL" : "SASL_SSL");
            out.put("ssl.truststore.type", "PEM");
            out.put("ssl.truststore.location", tls);
        }
        return out;
    }

    /** `config` logging in with `mechanism` (PLAIN or a SCRAM one) as `user`. */
    static Map<String, Object> withScram(Map<String, Object> config, String mechanism, String user, String password) {
        Map<String, Object> out = new HashMap<>(config);
        out.put("security.protocol", "SASL_PLAINTEXT");
        out.put("sasl.mechanism", mechanism);
        if (mechanism.equals("OAUTHBEARER")) {
            // OIDC client credentials (KIP-768): user and password are the
            // client id and secret the token endpoint JAVA_CLIENT_OAUTH_TOKEN_URL
            // takes; Kafka 4 clients only reach URLs the system property allows.
            String tokenUrl = System.getenv("JAVA_CLIENT_OAUTH_TOKEN_URL");
            System.setProperty("org.apache.kafka.sasl.oauthbearer.allowed.urls", tokenUrl);
            out.put("sasl.login.callback.handler.class",
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
            out.put("sasl.oauthbearer.token.endpoint.url", tokenUrl);
            out.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
                    + " clientId=\"" + user + "\" clientSecret=\"" + password + "\";");
            return out;
        }
        String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        out.put("sasl.jaas.config", module + " required username=\""
                + user + "\" password=\"" + password + "\";");
        return out;
    }

    /**
     * Sends `records` records ("k<i>", "v<i>") over the partitions with
     * `config`, waits for every acknowledgement, and returns their offsets.
     */
    static List<Long> sendAll(Map<String, Object> config, String topic, int records) throws Exception {
        List<Long> offsets = new ArrayList<>();
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < records; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k" + i, "v" + i)));
            }
            for (var future : sent) {
                offsets.add(future.get().offset());
            }
        }
        return offsets;
    }

    /**
     * How a producer made with `config` (whose login should fail) fails to
     * send: "Exception: message" of its SaslAuthenticationException, or
     * "none" when it sends.
     */
    static String refusal(Map<String, Object> config, String topic) {
        Map<String, Object> bounded = new HashMap<>(config);
        bounded.put("max.block.ms", "10000");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(bounded, new StringSerializer(), new StringSerializer())) {
            producer.send(new ProducerRecord<>(topic, 0, "k", "v")).get();
            return "none";
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null && !(cause instanceof org.apache.kafka.common.errors.SaslAuthenticationException)) {
                cause = cause.getCause();
            }
            return cause.getClass().getSimpleName() + ": " + cause.getMessage();
        }
    }

    /**
     * SASL/PLAIN as JAVA_CLIENT_SASL says: an idempotent producer sends
     * records, a consumer group reads them back and commits, the admin
     * client describes the group's offsets; a wrong password fails with the
     * broker's message.
     */
    static void plain(String bootstrap, String topic) throws Exception {
        Map<String, Object> base = withSasl(Map.of("bootstrap.servers", bootstrap));
        int records = 200;
        Map<String, Object> producerConfig = new HashMap<>(base);
        producerConfig.put("enable.idempotence", "true");
        sendAll(producerConfig, topic, records);
        Map<String, Object> consumerConfig = new HashMap<>(base);
        consumerConfig.put("group.id", "plain-group");
        consumerConfig.put("auto.offset.reset", "earliest");
        consumerConfig.put("enable.auto.commit", "false");
        Set<String> values = new java.util.TreeSet<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerConfig, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (values.size() < records && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
            consumer.commitSync();
        }
        long committed;
        try (Admin admin = Admin.create(base)) {
            committed = admin.listConsumerGroupOffsets("plain-group").partitionsToOffsetAndMetadata().get()
                    .values().stream().mapToLong(o -> o.offset()).sum();
        }
        // JAVA_CLIENT_SASL_REFUSED names a login the broker refuses (an
        // OAUTHBEARER client whose tokens it does not take); by default,
        // JAVA_CLIENT_SASL's user with a wrong password.
        String[] sasl = System.getenv("JAVA_CLIENT_SASL").split(":", 3);
        String[] refusedSasl = System.getenv().getOrDefault("JAVA_CLIENT_SASL_REFUSED",
                sasl[0] + ":" + sasl[1] + ":nope").split(":", 3);
        Map<String, Object> wrong = new HashMap<>(withScram(base, refusedSasl[0], refusedSasl[1], refusedSasl[2]));
        // Over the same listener as the rest (SASL_SSL with JAVA_CLIENT_TLS).
        wrong.put("security.protocol", base.get("security.protocol"));
        String refused = refusal(wrong, topic);
        System.out.printf("{\"read\": %d, \"committed\": %d, \"refused\": \"%s\"}%n",
                values.size(), committed, refused.replace("\"", "'"));
    }

    /**
     * SASL re-authentication (KIP-368) as JAVA_CLIENT_SASL logs in: a
     * producer sends a record every 100 ms for 5 s, each acknowledged
     * before the next, and reports its own counts of re-authentications
     * and closed connections (the selector metrics of producer-metrics).
     */
    static void reauth(String bootstrap, String topic) throws Exception {
        int acked = 0;
        double reauthenticated, failed, closed;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                withSasl(Map.of("bootstrap.servers", bootstrap)), new StringSerializer(), new StringSerializer())) {
            long end = System.currentTimeMillis() + 5_000;
            while (System.currentTimeMillis() < end) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "v" + acked)).get();
                acked++;
                Thread.sleep(100);
            }
            reauthenticated = producerMetric(producer, "successful-reauthentication-total");
            failed = producerMetric(producer, "failed-reauthentication-total");
            closed = producerMetric(producer, "connection-close-total");
        }
        System.out.printf("{\"acked\": %d, \"reauthenticated\": %d, \"failed\": %d, \"closed\": %d}%n",
                acked, (long) reauthenticated, (long) failed, (long) closed);
    }

    /**
     * Connection limits as kafka-configs --alter --entity-type brokers sets
     * them: max.connections.per.ip for every broker (--entity-default, the
     * resource named ""), an override for 127.0.0.2 and a creation rate for
     * broker 0 (--entity-name 0); then a bad value, and what --describe
     * shows of both resources: name=value (source) [synonyms].
     */
    // KIP-848 (group.protocol=consumer): one member takes every partition,
    // a second one joins and the server-side assignor splits them once the
    // first has revoked its share, the Admin describes and lists the group
    // as Kafka 4.x does, the second member leaves and the first gets
    // everything back, and the committed offsets outlive the members.
    static void consumerProtocol(String bootstrap, String topic) throws Exception {
        String t = topic + "-848";
        String group = topic + "-848-group";
        Map<String, Object> adminProps = withSasl(Map.of("bootstrap.servers", bootstrap));
        createSixPartitionsOfTen(bootstrap, adminProps, t);
        Properties cp = new Properties();
        cp.putAll(withSasl(Map.of("bootstrap.servers", bootstrap)));
        cp.put("group.id", group);
        cp.put("group.protocol", "consumer");
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        StringBuilder json = new StringBuilder("{");
        KafkaConsumer<String, String> a = new KafkaConsumer<>(cp);
        a.subscribe(List.of(t));
        int consumed = 0;
        long deadline = System.currentTimeMillis() + 60_000;
        while (consumed < 60 && System.currentTimeMillis() < deadline) {
            consumed += a.poll(Duration.ofMillis(200)).count();
        }
        a.commitSync();
        json.append("\"consumed\": ").append(consumed);
        KafkaConsumer<String, String> b = new KafkaConsumer<>(cp);
        b.subscribe(List.of(t));
        deadline = System.currentTimeMillis() + 60_000;
        while (!(a.assignment().size() == 3 && b.assignment().size() == 3) && System.currentTimeMillis() < deadline) {
            a.poll(Duration.ofMillis(100));
            b.poll(Duration.ofMillis(100));
        }
        Set<TopicPartition> both = new java.util.HashSet<>(a.assignment());
        both.addAll(b.assignment());
        json.append(", \"split\": \"").append(a.assignment().size()).append("+").append(b.assignment().size())
                .append(" of ").append(both.size()).append("\"");
        try (Admin admin = Admin.create(adminProps)) {
            var described = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            List<Integer> sizes = described.members().stream()
                    .map(m -> m.assignment().topicPartitions().size()).sorted().collect(Collectors.toList());
            json.append(", \"described\": \"").append(described.type()).append(" ").append(described.groupState())
                    .append(" ").append(described.partitionAssignor()).append(" ").append(sizes)
                    .append(" epoch>0=").append(described.groupEpoch().orElse(-1) > 0).append("\"");
            var listed = admin.listGroups().all().get().stream()
                    .filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
            json.append(", \"listed\": \"").append(listed.type().orElse(null)).append(" ")
                    .append(listed.protocol()).append(" ").append(listed.groupState().orElse(null)).append("\"");
            b.close();
            deadline = System.currentTimeMillis() + 60_000;
            while (a.assignment().size() != 6 && System.currentTimeMillis() < deadline) {
                a.poll(Duration.ofMillis(100));
            }
            json.append(", \"after_leave\": ").append(a.assignment().size());
            a.commitSync();
            a.close();
            var empty = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            json.append(", \"empty\": \"").append(empty.groupState()).append(" ").append(empty.members().size()).append("\"");
            long committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .values().stream().mapToLong(o -> o.offset()).sum();
            json.append(", \"committed\": ").append(committed);
            admin.deleteConsumerGroups(List.of(group)).all().get();
            String after;
            try {
                admin.describeConsumerGroups(List.of(group)).all().get();
                after = "still there";
            } catch (java.util.concurrent.ExecutionException e) {
                after = e.getCause().getClass().getSimpleName();
            }
            json.append(", \"after_delete\": \"").append(after).append("\"");
        }
        System.out.println(json.append("}"));
    }

    /** Creates topic `t` with 6 partitions and writes 10 records to each. */
    static void createSixPartitionsOfTen(String bootstrap, Map<String, Object> adminProps, String t) throws Exception {
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(t, 6, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.putAll(withSasl(Map.of("bootstrap.servers", bootstrap)));
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 60; i++) {
                producer.send(new ProducerRecord<>(t, i % 6, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    /** Polls every consumer until `done` holds or 60 s pass. */
    static void pollUntil(List<KafkaConsumer<String, String>> consumers, java.util.function.BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + 60_000;
        while (!done.getAsBoolean() && System.currentTimeMillis() < deadline) {
            for (KafkaConsumer<String, String> c : consumers) {
                c.poll(Duration.ofMillis(50));
            }
        }
    }

    /**
     * KIP-848's online migration: two classic consumers, one restarted on
     * the consumer protocol (the group is upgraded, the classic member keeps
     * its partitions), then it leaves (the group is classic again).
     */
    static void migration(String bootstrap, String topic) throws Exception {
        String t = topic + "-mig";
        String group = topic + "-mig-group";
        Map<String, Object> adminProps = withSasl(Map.of("bootstrap.servers", bootstrap));
        createSixPartitionsOfTen(bootstrap, adminProps, t);
        Properties classic = new Properties();
        classic.putAll(withSasl(Map.of("bootstrap.servers", bootstrap)));
        classic.put("group.id", group);
        classic.put("group.protocol", "classic");
        classic.put("auto.offset.reset", "earliest");
        classic.put("enable.auto.commit", "false");
        classic.put("key.deserializer", StringDeserializer.class.getName());
        classic.put("value.deserializer", StringDeserializer.class.getName());
        Properties modern = new Properties();
        modern.putAll(classic);
        modern.put("group.protocol", "consumer");
        StringBuilder json = new StringBuilder("{");
        try (Admin admin = Admin.create(adminProps)) {
            java.util.function.Function<String, String> describe = label -> {
                try {
                    var d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                    List<String> members = d.members().stream()
                            .map(m -> m.assignment().topicPartitions().size() + ":" + m.upgraded().map(u -> u ? "upgraded" : "classic").orElse("-"))
                            .sorted().collect(Collectors.toList());
                    return "\"" + label + "\": \"" + d.type() + " " + d.groupState() + " " + members + "\"";
                } catch (Exception e) {
                    return "\"" + label + "\": \"" + e.getCause().getClass().getSimpleName() + "\"";
                }
            };
            KafkaConsumer<String, String> a = new KafkaConsumer<>(classic);
            KafkaConsumer<String, String> b = new KafkaConsumer<>(classic);
            a.subscribe(List.of(t));
            b.subscribe(List.of(t));
            pollUntil(List.of(a, b), () -> a.assignment().size() == 3 && b.assignment().size() == 3);
            json.append(describe.apply("classic"));
            a.commitSync();
            b.close();
            KafkaConsumer<String, String> upgraded = new KafkaConsumer<>(modern);
            upgraded.subscribe(List.of(t));
            pollUntil(List.of(a, upgraded), () -> a.assignment().size() == 3 && upgraded.assignment().size() == 3);
            Set<TopicPartition> both = new java.util.HashSet<>(a.assignment());
            both.addAll(upgraded.assignment());
            json.append(", \"split\": ").append(both.size());
            long settle = System.currentTimeMillis() + 30_000;
            String described = describe.apply("upgraded");
            while (!described.contains("Consumer Stable") && System.currentTimeMillis() < settle) {
                a.poll(Duration.ofMillis(50));
                upgraded.poll(Duration.ofMillis(50));
                described = describe.apply("upgraded");
            }
            json.append(", ").append(described);
            a.commitSync();
            upgraded.commitSync();
            upgraded.close();
            pollUntil(List.of(a), () -> a.assignment().size() == 6);
            json.append(", \"after_leave\": ").append(a.assignment().size());
            long deadline = System.currentTimeMillis() + 30_000;
            String downgraded = describe.apply("downgraded");
            while (!downgraded.contains("Classic Stable") && System.currentTimeMillis() < deadline) {
                a.poll(Duration.ofMillis(100));
                downgraded = describe.apply("downgraded");
            }
            json.append(", ").append(downgraded);
            pollUntil(List.of(a), () -> a.assignment().stream().allMatch(tp -> a.position(tp) == 10));
            a.commitSync();
            a.close();
            long committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .values().stream().mapToLong(o -> o.offset()).sum();
            json.append(", \"committed\": ").append(committed);
        }
        System.out.println(json.append("}"));
    }

    static void connectionLimits(String bootstrap) throws Exception {
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER,
                System.getenv().getOrDefault("JAVA_CLIENT_BROKER_ID", "0"));
        String refused;
        Map<String, List<String>> shown = new HashMap<>();
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            admin.incrementalAlterConfigs(Map.of(
                    cluster, List.of(new AlterConfigOp(new ConfigEntry("max.connections.per.ip", "50"), AlterConfigOp.OpType.SET)),
                    broker, List.of(
                            new AlterConfigOp(new ConfigEntry("max.connections.per.ip.overrides", "127.0.0.2:1"), AlterConfigOp.OpType.SET),
                            new AlterConfigOp(new ConfigEntry("max.connection.creation.rate", "1000"), AlterConfigOp.OpType.SET))
            )).all().get();
            try {
                admin.incrementalAlterConfigs(Map.of(broker, List.of(
                        new AlterConfigOp(new ConfigEntry("max.connections.per.ip", "-1"), AlterConfigOp.OpType.SET))))
                        .all().get();
                refused = "accepted";
            } catch (java.util.concurrent.ExecutionException e) {
                refused = e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
            }
            var described = admin.describeConfigs(List.of(cluster, broker),
                    new org.apache.kafka.clients.admin.DescribeConfigsOptions().includeSynonyms(true)).all().get();
            for (var resource : List.of(cluster, broker)) {
                List<String> entries = new ArrayList<>();
                for (ConfigEntry entry : described.get(resource).entries()) {
                    if (!entry.name().startsWith("max.connection")) continue;
                    entries.add(entry.name() + "=" + entry.value() + " (" + entry.source() + ") "
                            + entry.synonyms().stream().map(s -> s.source() + ":" + s.value()).collect(Collectors.toList()));
                }
                Collections.sort(entries);
                shown.put(resource.name().isEmpty() ? "default" : "broker", entries);
            }
        }
        StringBuilder json = new StringBuilder("{\"refused\": \"" + refused.replace("\"", "'") + "\"");
        for (var e : shown.entrySet()) {
            json.append(", \"").append(e.getKey()).append("\": [");
            json.append(e.getValue().stream().map(v -> "\"" + v + "\"").collect(Collectors.joining(", ")));
            json.append("]");
        }
        System.out.println(json.append("}"));
    }

    static double producerMetric(KafkaProducer<String, String> producer, String name) {
        return producer.metrics().entrySet().stream()
                .filter(e -> e.getKey().group().equals("producer-metrics") && e.getKey().name().equals(name))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
                .sum();
    }

    /**
     * SASL/SCRAM as kafka-configs --alter --add-config 'SCRAM-SHA-512=[...]'
     * --entity-type users and a client logging in with it: the admin client
     * (logged in as JAVA_CLIENT_SASL says) creates java-user's SCRAM-SHA-512
     * credential and describes it; java-user produces and reads back; a
     * wrong password fails with the broker's message; the credential is
     * deleted and describing it fails.
     */
    static void scram(String bootstrap, String topic) throws Exception {
        Map<String, Object> adminConfig = withSasl(Map.of("bootstrap.servers", bootstrap));
        String described;
        try (Admin admin = Admin.create(adminConfig)) {
            admin.alterUserScramCredentials(List.of(new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(
                    "java-user",
                    new org.apache.kafka.clients.admin.ScramCredentialInfo(
                            org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_512, 8192),
                    "java-secret"))).all().get();
            var description = admin.describeUserScramCredentials(List.of("java-user")).description("java-user").get();
            described = description.credentialInfos().stream()
                    .map(i -> i.mechanism() + "/" + i.iterations())
                    .collect(Collectors.joining(","));
        }
        Map<String, Object> user = withScram(Map.of("bootstrap.servers", bootstrap), "SCRAM-SHA-512", "java-user", "java-secret");
        int records = 200;
        sendAll(user, topic, records);
        int read = read(user, topic, "read_uncommitted", records).size();
        Map<String, Object> wrong = withScram(Map.of("bootstrap.servers", bootstrap), "SCRAM-SHA-512", "java-user", "nope");
        String refused = refusal(wrong, topic);
        String afterDelete;
        try (Admin admin = Admin.create(adminConfig)) {
            admin.alterUserScramCredentials(List.of(new org.apache.kafka.clients.admin.UserScramCredentialDeletion(
                    "java-user", org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_512))).all().get();
            try {
                admin.describeUserScramCredentials(List.of("java-user")).description("java-user").get();
                afterDelete = "still described";
            } catch (java.util.concurrent.ExecutionException e) {
                afterDelete = e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
            }
        }
        System.out.printf("{\"described\": \"%s\", \"read\": %d, \"refused\": \"%s\", \"after_delete\": \"%s\"}%n",
                described, read, refused.replace("\"", "'"), afterDelete.replace("\"", "'"));
    }

    /** The simple name of `e`'s first cause that is a Kafka exception. */
    static String kafkaCause(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && !(cause instanceof org.apache.kafka.common.KafkaException)) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName();
    }

    /** "ok" when `action` runs, else the Kafka exception it failed with. */
    static String outcome(java.util.concurrent.Callable<?> action) {
        try {
            action.call();
            return "ok";
        } catch (Exception e) {
            return kafkaCause(e);
        }
    }

    /**
     * ACLs as kafka-acls --add/--list manages them (the admin client logged
     * in as JAVA_CLIENT_SASL says, a super user) deciding what alice
     * (SCRAM-SHA-256, alice-secret) may do with the Java client: its
     * idempotent producer needs WRITE on some topic, its transactional
     * producer WRITE on the transactional id, its consumer READ on the
     * group; each is refused with Kafka's exception before the ACL exists.
     */
    static void acls(String bootstrap, String topic) throws Exception {
        Map<String, Object> adminConfig = withSasl(Map.of("bootstrap.servers", bootstrap));
        Map<String, Object> alice = withScram(Map.of("bootstrap.servers", bootstrap), "SCRAM-SHA-256", "alice", "alice-secret");
        String txnId = "txn-" + topic;
        String group = "group-" + topic;
        var aliceAcl = (java.util.function.BiFunction<org.apache.kafka.common.resource.ResourcePattern,
                org.apache.kafka.common.acl.AclOperation, org.apache.kafka.common.acl.AclBinding>) (pattern, op) ->
                new org.apache.kafka.common.acl.AclBinding(pattern, new org.apache.kafka.common.acl.AccessControlEntry(
                        "User:alice", "*", op, org.apache.kafka.common.acl.AclPermissionType.ALLOW));
        var topicPattern = new org.apache.kafka.common.resource.ResourcePattern(
                org.apache.kafka.common.resource.ResourceType.TOPIC, topic, org.apache.kafka.common.resource.PatternType.LITERAL);
        var txnPattern = new org.apache.kafka.common.resource.ResourcePattern(
                org.apache.kafka.common.resource.ResourceType.TRANSACTIONAL_ID, txnId, org.apache.kafka.common.resource.PatternType.LITERAL);
        var groupPattern = new org.apache.kafka.common.resource.ResourcePattern(
                org.apache.kafka.common.resource.ResourceType.GROUP, group, org.apache.kafka.common.resource.PatternType.LITERAL);
        Map<String, Object> quick = new HashMap<>(alice);
        quick.put("max.block.ms", "10000");
        quick.put("delivery.timeout.ms", "10000");
        quick.put("request.timeout.ms", "5000");
        java.util.concurrent.Callable<Object> idempotent = () -> {
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(quick, new StringSerializer(), new StringSerializer())) {
                return producer.send(new ProducerRecord<>(topic, 0, "k", "v")).get();
            }
        };
        Map<String, Object> transactional = new HashMap<>(quick);
        transactional.put("transactional.id", txnId);
        java.util.concurrent.Callable<Object> transaction = () -> {
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(transactional, new StringSerializer(), new StringSerializer())) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, 0, "t", "committed")).get();
                producer.commitTransaction();
                return null;
            }
        };
        Map<String, Object> consumerConfig = new HashMap<>(alice);
        consumerConfig.put("group.id", group);
        consumerConfig.put("auto.offset.reset", "earliest");
        consumerConfig.put("default.api.timeout.ms", "10000");
        java.util.concurrent.Callable<Object> consume = () -> {
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 20000;
                while (System.currentTimeMillis() < deadline) {
                    if (!consumer.poll(Duration.ofMillis(200)).isEmpty()) {
                        consumer.commitSync();
                        return null;
                    }
                }
                throw new IllegalStateException("nothing read");
            }
        };
        Map<String, String> seen = new java.util.LinkedHashMap<>();
        try (Admin admin = Admin.create(adminConfig)) {
            seen.put("idempotent_before", outcome(idempotent));
            admin.createAcls(List.of(aliceAcl.apply(topicPattern, org.apache.kafka.common.acl.AclOperation.WRITE))).all().get();
            seen.put("idempotent_after", outcome(idempotent));
            seen.put("transaction_before", outcome(transaction));
            admin.createAcls(List.of(aliceAcl.apply(txnPattern, org.apache.kafka.common.acl.AclOperation.WRITE))).all().get();
            seen.put("transaction_after", outcome(transaction));
            admin.createAcls(List.of(aliceAcl.apply(topicPattern, org.apache.kafka.common.acl.AclOperation.READ))).all().get();
            seen.put("consume_before", outcome(consume));
            admin.createAcls(List.of(aliceAcl.apply(groupPattern, org.apache.kafka.common.acl.AclOperation.READ))).all().get();
            seen.put("consume_after", outcome(consume));
            var listed = admin.describeAcls(new org.apache.kafka.common.acl.AclBindingFilter(
                    new org.apache.kafka.common.resource.ResourcePatternFilter(
                            org.apache.kafka.common.resource.ResourceType.ANY, null, org.apache.kafka.common.resource.PatternType.ANY),
                    new org.apache.kafka.common.acl.AccessControlEntryFilter("User:alice", null,
                            org.apache.kafka.common.acl.AclOperation.ANY, org.apache.kafka.common.acl.AclPermissionType.ANY)))
                    .values().get();
            seen.put("listed", listed.stream()
                    .filter(b -> b.pattern().name().endsWith(topic))
                    .map(b -> b.pattern().resourceType() + ":" + b.entry().operation())
                    .sorted()
                    .collect(Collectors.joining(",")));
        }
        System.out.println(seen.entrySet().stream()
                .map(e -> "\"" + e.getKey() + "\": \"" + e.getValue() + "\"")
                .collect(Collectors.joining(", ", "{", "}")));
    }

    /**
     * Client quotas as kafka-configs --entity-type clients/users sets and
     * describes them (Admin.alterClientQuotas / describeClientQuotas), then
     * a producer and a consumer under byte-rate quotas: every record acked
     * and read back in order, throttled as the client's own metrics show.
     */
    static void quotas(String bootstrap, String topic) throws Exception {
        Map<String, String> seen = new java.util.TreeMap<>();
        String producerId = "java-quota-p-" + topic;
        String consumerId = "java-quota-c-" + topic;
        var producerEntity = new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("client-id", producerId));
        var consumerEntity = new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("client-id", consumerId));
        // The default client id's quota, below every named client id's.
        Map<String, String> defaultClient = new HashMap<>();
        defaultClient.put("client-id", null);
        var defaultClientEntity = new org.apache.kafka.common.quota.ClientQuotaEntity(defaultClient);
        var op = (java.util.function.BiFunction<String, Double, org.apache.kafka.common.quota.ClientQuotaAlteration.Op>)
                org.apache.kafka.common.quota.ClientQuotaAlteration.Op::new;
        var describeAll = org.apache.kafka.common.quota.ClientQuotaFilter.all();
        int rate = 100_000;
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            admin.alterClientQuotas(List.of(
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(producerEntity, List.of(op.apply("producer_byte_rate", (double) rate))),
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(consumerEntity, List.of(op.apply("consumer_byte_rate", (double) rate))),
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(defaultClientEntity, List.of(op.apply("producer_byte_rate", 1e12)))
            )).all().get();
            seen.put("fractional", outcome(() -> admin.alterClientQuotas(List.of(
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(producerEntity, List.of(op.apply("producer_byte_rate", 1.5)))
            )).all().get()));
            Thread.sleep(1000);
            var clients = admin.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.contains(List.of(
                    org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofEntityType("client-id")))).entities().get();
            seen.put("clients", clients.entrySet().stream()
                    .filter(e -> e.getKey().entries().get("client-id") != null && e.getKey().entries().get("client-id").endsWith(topic))
                    .map(e -> e.getKey().entries().get("client-id").replace(topic, "T") + "=" + new java.util.TreeMap<>(e.getValue()))
                    .sorted().collect(Collectors.joining(";")));
            var defaults = admin.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.containsOnly(List.of(
                    org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofDefaultEntity("client-id")))).entities().get();
            seen.put("default_client", defaults.toString());
        }
        int records = 1500;
        long start = System.nanoTime();
        Map<String, Object> producerConfig = new HashMap<>(Map.of("bootstrap.servers", bootstrap, "client.id", producerId,
                "linger.ms", "5"));
        String value = "v".repeat(1000);
        int acked = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<RecordMetadata>> sends = new ArrayList<>();
            for (int i = 0; i < records; i++) {
                sends.add(producer.send(new ProducerRecord<>(topic, 0, Integer.toString(i), value)));
            }
            for (var send : sends) {
                send.get();
                acked++;
            }
            seen.put("produce_throttled", Boolean.toString(metric(producer.metrics(), "produce-throttle-time-max") > 0));
        }
        seen.put("acked", Integer.toString(acked));
        seen.put("produce_at_least_5s", Boolean.toString(System.nanoTime() - start >= 5_000_000_000L));
        start = System.nanoTime();
        Map<String, Object> consumerConfig = new HashMap<>(Map.of("bootstrap.servers", bootstrap, "client.id", consumerId,
                "auto.offset.reset", "earliest", "enable.auto.commit", "false"));
        int read = 0;
        boolean inOrder = true;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            consumer.seekToBeginning(List.of(new TopicPartition(topic, 0)));
            long deadline = System.currentTimeMillis() + 90_000;
            while (read < records && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    inOrder &= record.offset() == read && record.key().equals(Integer.toString(read));
                    read++;
                }
            }
            seen.put("fetch_throttled", Boolean.toString(metric(consumer.metrics(), "fetch-throttle-time-max") > 0));
        }
        seen.put("read", Integer.toString(read));
        seen.put("in_order", Boolean.toString(inOrder));
        seen.put("consume_at_least_5s", Boolean.toString(System.nanoTime() - start >= 5_000_000_000L));
        // An admin client under controller_mutation_rate: 1 partition a
        // second, a burst of 11. Told not to retry, the topic past the
        // quota fails; by default the client waits out the throttle and
        // retries, and every topic is created.
        String adminId = "java-quota-admin-" + topic;
        var adminEntity = new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("client-id", adminId));
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            admin.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                    adminEntity, List.of(op.apply("controller_mutation_rate", 1.0))))).all().get();
        }
        Thread.sleep(1000);
        try (Admin limited = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap, "client.id", adminId)))) {
            var created = limited.createTopics(List.of(
                    new NewTopic(topic + "-m1", 10, (short) 1), new NewTopic(topic + "-m2", 10, (short) 1),
                    new NewTopic(topic + "-m3", 10, (short) 1)),
                    new org.apache.kafka.clients.admin.CreateTopicsOptions().retryOnQuotaViolation(false)).values();
            seen.put("no_retry", List.of("-m1", "-m2", "-m3").stream()
                    .map(suffix -> outcome(() -> created.get(topic + suffix).get()))
                    .collect(Collectors.joining(",")));
        }
        start = System.nanoTime();
        try (Admin limited = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap, "client.id", adminId)))) {
            limited.createTopics(List.of(new NewTopic(topic + "-m3", 2, (short) 1))).all().get();
            seen.put("retried_after_throttle", Boolean.toString(System.nanoTime() - start >= 5_000_000_000L));
        }
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            admin.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                    adminEntity, List.of(op.apply("controller_mutation_rate", null))))).all().get();
            admin.alterClientQuotas(List.of(
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(producerEntity, List.of(op.apply("producer_byte_rate", null))),
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(consumerEntity, List.of(op.apply("consumer_byte_rate", null))),
                    new org.apache.kafka.common.quota.ClientQuotaAlteration(defaultClientEntity, List.of(op.apply("producer_byte_rate", null)))
            )).all().get();
            Thread.sleep(1000);
            seen.put("left", Long.toString(admin.describeClientQuotas(describeAll).entities().get().keySet().stream()
                    .filter(e -> e.equals(producerEntity) || e.equals(consumerEntity) || e.equals(defaultClientEntity)).count()));
        }
        // A producer under request_percentage 0.000001 (0.1 us of handling
        // over ten seconds): every answer is throttled for a whole window,
        // and every record is still written.
        String requestId = "java-quota-r-" + topic;
        var requestEntity = new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("client-id", requestId));
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            admin.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                    requestEntity, List.of(op.apply("request_percentage", 1e-6))))).all().get();
            Thread.sleep(1000);
            seen.put("request_quota", admin.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.containsOnly(List.of(
                    org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofEntity("client-id", requestId))))
                    .entities().get().values().toString());
        }
        int requestAcked = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(new HashMap<>(Map.of(
                "bootstrap.servers", bootstrap, "client.id", requestId)), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "r" + i, value)).get();
                requestAcked++;
            }
            seen.put("request_throttle_max", Double.toString(metric(producer.metrics(), "produce-throttle-time-max")));
        }
        seen.put("request_acked", Integer.toString(requestAcked));
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            admin.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                    requestEntity, List.of(op.apply("request_percentage", null))))).all().get();
        }
        System.out.println(seen.entrySet().stream()
                .map(e -> "\"" + e.getKey() + "\": \"" + e.getValue().replace("\"", "'") + "\"")
                .collect(Collectors.joining(", ", "{", "}")));
    }

    /** The largest value of the client metric called `name`. */
    static double metric(Map<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> metrics, String name) {
        return metrics.entrySet().stream()
                .filter(e -> e.getKey().name().equals(name))
                .mapToDouble(e -> e.getValue().metricValue() instanceof Double d && !d.isNaN() ? d : 0.0)
                .max().orElse(0.0);
    }

    /** The producer's defaults: acks=all and idempotence on. */
    static void idempotentDefaults(String bootstrap, String topic) throws Exception {
        int records = 2000;
        List<Long> offsets = sendAll(Map.of("bootstrap.servers", bootstrap), topic, records);
        List<String> values = read(bootstrap, topic, "read_uncommitted", records);
        System.out.printf("{\"acked\": %d, \"read\": %d, \"distinct\": %d}%n",
                offsets.size(), values.size(), values.stream().distinct().count());
    }

    /**
     * One idempotent producer (Produce v13 names topics by id) writes to a
     * topic, the topic is deleted and made again under the same name (a new
     * id), and the same producer writes on: its first requests name the old
     * id. Small records and records of 40 KiB (received straight into the
     * log's memory on the owning shard). Prints the ids, what was acked
     * after the re-creation and what the new topic holds.
     */
    static void recreatedTopic(String bootstrap, String topic) throws Exception {
        String big = "x".repeat(40 << 10);
        Map<String, Object> config = Map.of("bootstrap.servers", bootstrap, "linger.ms", "5");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
                Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            String firstId = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId().toString();
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k", (i % 4 == 0 ? big : "") + "before-" + i)).get();
            }
            admin.deleteTopics(List.of(topic)).all().get();
            long deadline = System.currentTimeMillis() + 30_000;
            while (admin.listTopics().names().get().contains(topic)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("topic not deleted");
                }
                Thread.sleep(100);
            }
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
            String secondId = null;
            while (secondId == null) {
                try {
                    secondId = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId().toString();
                } catch (java.util.concurrent.ExecutionException e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k", (i % 4 == 0 ? big : "") + "after-" + i)));
            }
            List<String> acked = new ArrayList<>();
            for (var future : sent) {
                RecordMetadata metadata = future.get();
                acked.add(metadata.partition() + "@" + metadata.offset());
            }
            List<String> read = read(bootstrap, topic, "read_uncommitted", 40).stream()
                    .map(v -> v.replace(big, "big-")).toList();
            // Retried: the old id's UNKNOWN_TOPIC_ID answers.
            double retried = metric(producer.metrics(), "record-retry-total");
            System.out.printf("{\"ids_differ\": %b, \"retried\": %b, \"acked\": \"%s\", \"read\": \"%s\"}%n",
                    !firstId.equals(secondId), retried > 0, String.join(",", acked), String.join(",", read));
        }
    }

    /** Ten transactions of ten records, every fifth aborted; then what the
     * admin client says about the transactional id and the producers. */
    static void transactions(String bootstrap, String topic) throws Exception {
        String transactionalId = topic + "-java-txn";
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", transactionalId);
        int committed = 0;
        int aborted = 0;
        List<String> epochs = new ArrayList<>();
        short transactionVersion;
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
                Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            var finalized = admin.describeFeatures().featureMetadata().get().finalizedFeatures();
            transactionVersion = finalized.containsKey("transaction.version")
                    ? finalized.get("transaction.version").maxVersionLevel() : 0;
            producer.initTransactions();
            for (int t = 1; t <= 10; t++) {
                producer.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k", "t" + t + "-" + i));
                }
                if (t % 5 == 0) {
                    producer.flush();
                    producer.abortTransaction();
                    aborted += 10;
                } else {
                    producer.commitTransaction();
                    committed += 10;
                }
                // The coordinator's epoch after each transaction: bumped by
                // every commit and abort under transactions V2.
                epochs.add(String.valueOf(admin.describeTransactions(List.of(transactionalId))
                        .description(transactionalId).get().producerEpoch()));
            }
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, "k", "open")).get();
            String state;
            String listed;
            String producers;
            {
                TransactionDescription description =
                        admin.describeTransactions(List.of(transactionalId)).description(transactionalId).get();
                state = description.state().toString();
                Collection<TransactionListing> listings = admin.listTransactions().all().get();
                listed = listings.stream()
                        .filter(l -> l.transactionalId().equals(transactionalId))
                        .map(l -> l.state().toString())
                        .collect(Collectors.joining(","));
                List<ProducerState> active = admin.describeProducers(List.of(new TopicPartition(topic, 0)))
                        .partitionResult(new TopicPartition(topic, 0)).get().activeProducers();
                producers = active.stream()
                        .map(p -> p.currentTransactionStartOffset().isPresent() ? "open" : "idle")
                        .collect(Collectors.joining(","));
            }
            producer.abortTransaction();
            List<String> readCommitted = read(bootstrap, topic, "read_committed", committed);
            List<String> readUncommitted = read(bootstrap, topic, "read_uncommitted", committed + aborted + 1);
            System.out.printf(
                    "{\"committed\": %d, \"aborted\": %d, \"read_committed\": %d, \"read_committed_distinct\": %d, "
                            + "\"read_committed_aborted\": %d, \"read_uncommitted\": %d, \"state\": \"%s\", "
                            + "\"listed\": \"%s\", \"producers\": \"%s\", \"transaction_version\": %d, "
                            + "\"epochs\": [%s]}%n",
                    committed, aborted, readCommitted.size(), readCommitted.stream().distinct().count(),
                    readCommitted.stream().filter(v -> v.startsWith("t5-") || v.startsWith("t10-") || v.equals("open")).count(),
                    readUncommitted.size(), state, listed, producers, transactionVersion, String.join(", ", epochs));
        }
    }

    /** `kafka-delegation-tokens` (the admin client logged in as
     * JAVA_CLIENT_SASL says, if at all): create (for itself, for bob, with a
     * Group renewer), describe, renew and expire, each "ok" or the
     * exception it failed with. */
    static void delegationTokens(String bootstrap) throws Exception {
        Map<String, String> seen = new java.util.TreeMap<>();
        try (Admin admin = Admin.create(withSasl(Map.of("bootstrap.servers", bootstrap)))) {
            var bob = new org.apache.kafka.common.security.auth.KafkaPrincipal("User", "bob");
            var group = new org.apache.kafka.common.security.auth.KafkaPrincipal("Group", "g");
            seen.put("create", outcome(() -> admin.createDelegationToken().delegationToken().get()));
            seen.put("create for bob", outcome(() -> admin.createDelegationToken(
                    new org.apache.kafka.clients.admin.CreateDelegationTokenOptions().owner(bob)).delegationToken().get()));
            seen.put("create renewed by a group", outcome(() -> admin.createDelegationToken(
                    new org.apache.kafka.clients.admin.CreateDelegationTokenOptions().renewers(List.of(group)))
                    .delegationToken().get()));
            seen.put("describe", outcome(() -> admin.describeDelegationToken().delegationTokens().get()));
            seen.put("renew", outcome(() -> admin.renewDelegationToken(new byte[] {1, 2}).expiryTimestamp().get()));
            seen.put("expire", outcome(() -> admin.expireDelegationToken(new byte[] {1, 2}).expiryTimestamp().get()));
        }
        StringBuilder out = new StringBuilder("{");
        seen.forEach((k, v) -> out.append(out.length() > 1 ? ", " : "").append(quote(k)).append(": ").append(quote(v)));
        System.out.println(out.append("}"));
    }

    /** Who logs in as `user` (password `<user>-secret`, SCRAM-SHA-256). */
    static Map<String, Object> asUser(String bootstrap, String user) {
        return withScram(Map.of("bootstrap.servers", bootstrap), "SCRAM-SHA-256", user, user + "-secret");
    }

    /** A delegation token login: the token id as user, the HMAC's base64 as password, `tokenauth`. */
    static Map<String, Object> asToken(String bootstrap, String mechanism, String tokenId, String hmac) {
        Map<String, Object> out = withScram(Map.of("bootstrap.servers", bootstrap), mechanism, tokenId, hmac);
        out.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + tokenId + "\" password=\"" + hmac + "\" tokenauth=\"true\";");
        return out;
    }

    /** A token as the tests compare it: owner, requester, renewers, lifetimes (ms after issue). */
    static String token(org.apache.kafka.common.security.token.delegation.DelegationToken token) {
        var info = token.tokenInfo();
        return info.owner() + " by " + info.tokenRequester() + " renewers " + info.renewers()
                + " expiry+" + (info.expiryTimestamp() - info.issueTimestamp())
                + " max+" + (info.maxTimestamp() - info.issueTimestamp());
    }

    /** The ids of the tokens `config`'s principal is shown, owners filtered if given, sorted by owner. */
    static String described(Map<String, Object> config, List<org.apache.kafka.common.security.auth.KafkaPrincipal> owners) {
        return outcomeOr(() -> {
            try (Admin admin = Admin.create(config)) {
                var options = new org.apache.kafka.clients.admin.DescribeDelegationTokenOptions();
                if (owners != null) {
                    options.owners(owners);
                }
                return admin.describeDelegationToken(options).delegationTokens().get().stream()
                        .map(t -> t.tokenInfo().owner().getName() + "/" + t.tokenInfo().tokenRequester().getName())
                        .sorted().collect(Collectors.joining(","));
            }
        });
    }

    /** The value `action` gives, or the Kafka exception it failed with. */
    static String outcomeOr(java.util.concurrent.Callable<String> action) {
        try {
            return action.call();
        } catch (Exception e) {
            return kafkaCause(e);
        }
    }

    /**
     * Delegation tokens as `kafka-delegation-tokens` and the Admin API use
     * them, on a SASL_PLAINTEXT listener with StandardAuthorizer, admin a
     * super user and alice allowed everything on `<topic>`; users admin,
     * alice, bob, carol (password `<user>-secret`); main creates `<topic>`
     * as JAVA_CLIENT_SASL (admin). Prints every outcome,
     * and token A's id and HMAC for a later run of "token-login".
     */
    static void tokenLife(String bootstrap, String topic) throws Exception {
        Map<String, String> seen = new java.util.TreeMap<>();
        var user = (java.util.function.Function<String, org.apache.kafka.common.security.auth.KafkaPrincipal>)
                name -> new org.apache.kafka.common.security.auth.KafkaPrincipal("User", name);
        try (Admin admin = Admin.create(asUser(bootstrap, "admin"))) {
            var alicePattern = new org.apache.kafka.common.resource.ResourcePattern(
                    org.apache.kafka.common.resource.ResourceType.TOPIC, topic,
                    org.apache.kafka.common.resource.PatternType.LITERAL);
            admin.createAcls(List.of(new org.apache.kafka.common.acl.AclBinding(alicePattern,
                    new org.apache.kafka.common.acl.AccessControlEntry("User:alice", "*",
                            org.apache.kafka.common.acl.AclOperation.ALL,
                            org.apache.kafka.common.acl.AclPermissionType.ALLOW)))).all().get();
        }
        org.apache.kafka.common.security.token.delegation.DelegationToken a;
        org.apache.kafka.common.security.token.delegation.DelegationToken b;
        try (Admin alice = Admin.create(asUser(bootstrap, "alice"))) {
            a = alice.createDelegationToken(new org.apache.kafka.clients.admin.CreateDelegationTokenOptions()
                    .renewers(List.of(user.apply("bob")))).delegationToken().get();
            b = alice.createDelegationToken(new org.apache.kafka.clients.admin.CreateDelegationTokenOptions()
                    .maxlifeTimeMs(100)).delegationToken().get();
            seen.put("A", token(a));
            seen.put("A id and hmac", a.tokenInfo().tokenId().length() + " " + a.hmac().length);
            seen.put("B", token(b));
            seen.put("alice for bob", outcome(() -> alice.createDelegationToken(
                    new org.apache.kafka.clients.admin.CreateDelegationTokenOptions().owner(user.apply("bob")))
                    .delegationToken().get()));
            seen.put("alice renewed by a group", outcome(() -> alice.createDelegationToken(
                    new org.apache.kafka.clients.admin.CreateDelegationTokenOptions().renewers(List.of(
                            new org.apache.kafka.common.security.auth.KafkaPrincipal("Group", "g"))))
                    .delegationToken().get()));
        }
        String aHmac = a.hmacAsBase64String();
        String bHmac = b.hmacAsBase64String();
        try (Admin admin = Admin.create(asUser(bootstrap, "admin"))) {
            seen.put("admin for bob", token(admin.createDelegationToken(
                    new org.apache.kafka.clients.admin.CreateDelegationTokenOptions().owner(user.apply("bob")))
                    .delegationToken().get()));
        }
        // Who sees which tokens (owner/requester of each).
        seen.put("describe admin", described(asUser(bootstrap, "admin"), null));
        seen.put("describe alice", described(asUser(bootstrap, "alice"), null));
        seen.put("describe bob", described(asUser(bootstrap, "bob"), null));
        seen.put("describe carol", described(asUser(bootstrap, "carol"), null));
        seen.put("describe admin owners bob", described(asUser(bootstrap, "admin"), List.of(user.apply("bob"))));
        seen.put("describe admin owners none", described(asUser(bootstrap, "admin"), List.of()));
        try (Admin admin = Admin.create(asUser(bootstrap, "admin"))) {
            var describeTokens = new org.apache.kafka.common.resource.ResourcePattern(
                    org.apache.kafka.common.resource.ResourceType.USER, "User:alice",
                    org.apache.kafka.common.resource.PatternType.LITERAL);
            admin.createAcls(List.of(new org.apache.kafka.common.acl.AclBinding(describeTokens,
                    new org.apache.kafka.common.acl.AccessControlEntry("User:carol", "*",
                            org.apache.kafka.common.acl.AclOperation.DESCRIBE_TOKENS,
                            org.apache.kafka.common.acl.AclPermissionType.ALLOW)))).all().get();
        }
        seen.put("describe carol with DESCRIBE_TOKENS on alice", described(asUser(bootstrap, "carol"), null));
        // Logging in with token A: alice's ACLs apply; token requests are refused.
        for (String mechanism : List.of("SCRAM-SHA-256", "SCRAM-SHA-512")) {
            Map<String, Object> viaToken = asToken(bootstrap, mechanism, a.tokenInfo().tokenId(), aHmac);
            String key = "token " + mechanism;
            seen.put(key + " sends", outcomeOr(() -> String.valueOf(sendAll(viaToken, topic, 20).size())));
            try (Admin tokenAdmin = Admin.create(viaToken)) {
                seen.put(key + " describes", outcome(() -> tokenAdmin.describeDelegationToken().delegationTokens().get()));
                seen.put(key + " creates", outcome(() -> tokenAdmin.createDelegationToken().delegationToken().get()));
            }
        }
        seen.put("token read", String.valueOf(read(asToken(bootstrap, "SCRAM-SHA-256", a.tokenInfo().tokenId(), aHmac),
                topic, "read_uncommitted", 40).size()));
        seen.put("token wrong hmac", refusal(asToken(bootstrap, "SCRAM-SHA-256", a.tokenInfo().tokenId(), bHmac), topic));
        // Renewing and expiring.
        try (Admin bob = Admin.create(asUser(bootstrap, "bob"));
             Admin carol = Admin.create(asUser(bootstrap, "carol"));
             Admin alice = Admin.create(asUser(bootstrap, "alice"))) {
            seen.put("carol renews A", outcome(() -> carol.renewDelegationToken(a.hmac()).expiryTimestamp().get()));
            long before = System.currentTimeMillis();
            long renewed = bob.renewDelegationToken(a.hmac(),
                    new org.apache.kafka.clients.admin.RenewDelegationTokenOptions().renewTimePeriodMs(60_000))
                    .expiryTimestamp().get();
            long after = System.currentTimeMillis();
            seen.put("bob renews A for 60 s", renewed >= before + 60_000 && renewed <= after + 60_000 ? "ok" : "expiry " + (renewed - before));
            seen.put("renew unknown", outcome(() -> bob.renewDelegationToken(new byte[] {1, 2, 3}).expiryTimestamp().get()));
            Thread.sleep(300);
            seen.put("renew B expired", outcome(() -> alice.renewDelegationToken(b.hmac()).expiryTimestamp().get()));
            seen.put("expire B expired for 1 s", outcome(() -> alice.expireDelegationToken(b.hmac(),
                    new org.apache.kafka.clients.admin.ExpireDelegationTokenOptions().expiryTimePeriodMs(1000)).expiryTimestamp().get()));
            seen.put("token B login", refusal(asToken(bootstrap, "SCRAM-SHA-256", b.tokenInfo().tokenId(), bHmac), topic)
                    .startsWith("none") ? "served" : "refused");
            seen.put("bob removes B", outcome(() -> bob.expireDelegationToken(b.hmac(),
                    new org.apache.kafka.clients.admin.ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp().get()));
            long removing = System.currentTimeMillis();
            long removed = alice.expireDelegationToken(b.hmac()).expiryTimestamp().get();
            seen.put("alice removes B", removed >= removing && removed <= System.currentTimeMillis() ? "now" : "at " + (removed - removing));
            seen.put("alice removes B again", outcome(() -> alice.expireDelegationToken(b.hmac()).expiryTimestamp().get()));
        }
        seen.put("describe alice at the end", described(asUser(bootstrap, "alice"), null));
        seen.put("A token", a.tokenInfo().tokenId());
        seen.put("A hmac", aHmac);
        printJson(seen);
    }

    /**
     * Logs in with the token JAVA_CLIENT_TOKEN ("id hmac [other-hmac]") and
     * reads back `<topic>`; prints how many records it read, what alice is
     * shown, and how a login with the other HMAC, if given, fails.
     */
    static void tokenLogin(String bootstrap, String topic) throws Exception {
        String[] token = System.getenv("JAVA_CLIENT_TOKEN").split(" ");
        Map<String, String> seen = new java.util.TreeMap<>();
        seen.put("read", String.valueOf(read(asToken(bootstrap, "SCRAM-SHA-512", token[0], token[1]),
                topic, "read_uncommitted", 40).size()));
        seen.put("describe alice", described(asUser(bootstrap, "alice"), null));
        if (token.length > 2) {
            seen.put("other hmac", refusal(asToken(bootstrap, "SCRAM-SHA-256", token[0], token[2]), topic));
        }
        printJson(seen);
    }

    /**
     * A token of 2 s max lifetime (alice's): described at first, then,
     * once the broker's sweep has removed it, no longer, and renewing it
     * is refused as not found.
     */
    static void tokenSweep(String bootstrap) throws Exception {
        Map<String, String> seen = new java.util.TreeMap<>();
        try (Admin alice = Admin.create(asUser(bootstrap, "alice"))) {
            var token = alice.createDelegationToken(new org.apache.kafka.clients.admin.CreateDelegationTokenOptions()
                    .maxlifeTimeMs(2000)).delegationToken().get();
            seen.put("described at first", String.valueOf(alice.describeDelegationToken().delegationTokens().get().size()));
            long deadline = System.currentTimeMillis() + 20_000;
            while (!alice.describeDelegationToken().delegationTokens().get().isEmpty()
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            seen.put("described at last", String.valueOf(alice.describeDelegationToken().delegationTokens().get().size()));
            seen.put("renew once swept", outcome(() -> alice.renewDelegationToken(token.hmac()).expiryTimestamp().get()));
        }
        printJson(seen);
    }

    /** Prints `seen` as one JSON object of strings. */
    static void printJson(Map<String, String> seen) {
        StringBuilder out = new StringBuilder("{");
        seen.forEach((k, v) -> out.append(out.length() > 1 ? ", " : "").append(quote(k)).append(": ").append(quote(v)));
        System.out.println(out.append("}"));
    }

    /** `kafka-reassign-partitions` with `log_dirs` (AlterReplicaLogDirs):
     * moves of `<topic>`'s partitions (main made two) to the broker's one log directory
     * (as DescribeLogDirs names it: DIR below) and to other paths, each
     * outcome ("ok" or the exception), then where the replica is. */
    static void logDirs(String bootstrap, String topic) throws Exception {
        Map<String, String> seen = new java.util.TreeMap<>();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            int node = admin.describeCluster().nodes().get().iterator().next().id();
            var dirs = admin.describeLogDirs(List.of(node)).allDescriptions().get().get(node).keySet();
            String dir = dirs.iterator().next();
            seen.put("dirs", String.valueOf(dirs.size()));
            String longName = topic + "-" + "x".repeat(240 - topic.length() - 1);
            String[][] moves = {
                {topic, "0", dir}, {topic, "1", dir + "/"}, {topic, "0", "/nonexistent"}, {topic, "0", "relative"},
                {topic, "5", dir}, {topic + "-absent", "0", dir}, {topic + "-absent", "0", "/nonexistent"},
                {longName, "0", "/nonexistent"}};
            for (String[] move : moves) {
                var replica = new org.apache.kafka.common.TopicPartitionReplica(move[0], Integer.parseInt(move[1]), node);
                String key = (move[0].equals(longName) ? "LONG" : move[0].replace(topic, "T")) + "-" + move[1]
                        + " " + move[2].replace(dir, "DIR");
                seen.put(key, outcome(() -> admin.alterReplicaLogDirs(Map.of(replica, move[2])).all().get()));
            }
            var replica = new org.apache.kafka.common.TopicPartitionReplica(topic, 0, node);
            seen.put("replica dir", admin.describeReplicaLogDirs(List.of(replica)).all().get().get(replica)
                    .getCurrentReplicaLogDir().replace(dir, "DIR"));
        }
        StringBuilder out = new StringBuilder("{");
        seen.forEach((k, v) -> out.append(out.length() > 1 ? ", " : "").append(quote(k)).append(": ").append(quote(v)));
        System.out.println(out.append("}"));
    }

    /** `kafka-transactions list --transactional-id-pattern` (KIP-1152,
     * ListTransactions v2): three transactional producers, `<prefix>-app-1`,
     * `<prefix>-app-2` and `<prefix>-other`, then the ids (of these three)
     * each pattern lists, or the exception a bad pattern fails with. */
    static void listTransactionsPattern(String bootstrap, String prefix) throws Exception {
        List<KafkaProducer<String, String>> producers = new ArrayList<>();
        Map<String, String> seen = new java.util.TreeMap<>();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            for (String id : List.of(prefix + "-app-1", prefix + "-app-2", prefix + "-other")) {
                Properties props = new Properties();
                props.put("bootstrap.servers", bootstrap);
                props.put("transactional.id", id);
                var producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
                producers.add(producer);
                producer.initTransactions();
            }
            java.util.function.Function<org.apache.kafka.clients.admin.ListTransactionsOptions, String> list = options -> {
                try {
                    return admin.listTransactions(options).all().get().stream()
                            .map(TransactionListing::transactionalId)
                            .filter(id -> id.startsWith(prefix + "-"))
                            .map(id -> id.substring(prefix.length() + 1))
                            .sorted()
                            .collect(Collectors.joining(","));
                } catch (Exception e) {
                    return kafkaCause(e);
                }
            };
            for (String pattern : List.of(prefix + "-app-.*", prefix + "-app", ".*-other", "", ".*", "(",
                    "[a-", "(?P<x>.*)-app-1", "a\\1")) {
                seen.put(pattern.replace(prefix, "P"), list.apply(
                        new org.apache.kafka.clients.admin.ListTransactionsOptions().filterOnTransactionalIdPattern(pattern)));
            }
            seen.put("empty state and pattern", list.apply(new org.apache.kafka.clients.admin.ListTransactionsOptions()
                    .filterOnTransactionalIdPattern(".*-app-.*")
                    .filterStates(List.of(org.apache.kafka.clients.admin.TransactionState.EMPTY))));
            seen.put("ongoing state and pattern", list.apply(new org.apache.kafka.clients.admin.ListTransactionsOptions()
                    .filterOnTransactionalIdPattern(".*-app-.*")
                    .filterStates(List.of(org.apache.kafka.clients.admin.TransactionState.ONGOING))));
        } finally {
            producers.forEach(KafkaProducer::close);
        }
        StringBuilder out = new StringBuilder("{");
        seen.forEach((k, v) -> out.append(out.length() > 1 ? ", " : "").append(quote(k)).append(": ").append(quote(v)));
        System.out.println(out.append("}"));
    }

    /** The admin client downgrades transaction.version to 1, a new
     * transactional producer runs three transactions (its epoch stays: V1),
     * the admin client upgrades it back to 2, and a new producer runs three
     * more (its epoch grows with each: V2). Prints the finalized levels the
     * admin client saw and each producer's epochs after each transaction. */
    /** kafka-features upgrade/downgrade of one feature, waited for. */
    static void updateFeature(Admin admin, String feature, FeatureUpdate update) throws Exception {
        admin.updateFeatures(Map.of(feature, update),
                new org.apache.kafka.clients.admin.UpdateFeaturesOptions()).all().get();
    }

    static void transactionVersion(String bootstrap, String topic) throws Exception {
        List<String> levels = new ArrayList<>();
        List<String> runs = new ArrayList<>();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
          try {
            for (var update : List.of(
                    new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE),
                    new FeatureUpdate((short) 2, FeatureUpdate.UpgradeType.UPGRADE))) {
                updateFeature(admin, "transaction.version", update);
                var finalized = admin.describeFeatures().featureMetadata().get().finalizedFeatures();
                levels.add(String.valueOf(finalized.get("transaction.version").maxVersionLevel()));
                String transactionalId = topic + "-tv" + update.maxVersionLevel();
                Properties props = new Properties();
                props.put("bootstrap.servers", bootstrap);
                props.put("transactional.id", transactionalId);
                List<String> epochs = new ArrayList<>();
                try (KafkaProducer<String, String> producer =
                        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
                    producer.initTransactions();
                    for (int t = 0; t < 3; t++) {
                        producer.beginTransaction();
                        producer.send(new ProducerRecord<>(topic, t % PARTITIONS, "k", "v" + t));
                        producer.commitTransaction();
                        epochs.add(String.valueOf(admin.describeTransactions(List.of(transactionalId))
                                .description(transactionalId).get().producerEpoch()));
                    }
                }
                runs.add("[" + String.join(", ", epochs) + "]");
            }
          } finally {
            // Level 2 again for the tests after this one, whatever happened.
            updateFeature(admin, "transaction.version",
                    new FeatureUpdate((short) 2, FeatureUpdate.UpgradeType.UPGRADE));
          }
        }
        System.out.printf("{\"levels\": [%s], \"epochs\": [%s]}%n", String.join(", ", levels), String.join(", ", runs));
    }

    /** kafka-features downgrade --feature group.version=0: the consumer
     * group protocol (KIP-848) is off. A consumer with group.protocol=consumer
     * is told so when it polls; a classic one reads its partitions, and the
     * admin client describes its group through DescribeGroups. Upgraded back
     * to 1, a consumer-protocol consumer reads again. */
    static void groupVersion(String bootstrap, String topic) throws Exception {
        Map<String, Object> adminProps = Map.of("bootstrap.servers", bootstrap);
        String t = topic + "-gv";
        createSixPartitionsOfTen(bootstrap, adminProps, t);
        StringBuilder json = new StringBuilder("{");
        try (Admin admin = Admin.create(adminProps)) {
            java.util.function.Supplier<String> finalized = () -> {
                try {
                    var level = admin.describeFeatures().featureMetadata().get()
                            .finalizedFeatures().get("group.version");
                    return level == null ? "absent" : String.valueOf(level.maxVersionLevel());
                } catch (Exception e) {
                    return "error " + e.getCause();
                }
            };
            java.util.function.Function<String, KafkaConsumer<String, String>> consumer = protocol -> {
                Properties cp = new Properties();
                cp.put("bootstrap.servers", bootstrap);
                cp.put("group.id", topic + "-" + protocol + "-" + finalized.get());
                cp.put("group.protocol", protocol);
                cp.put("auto.offset.reset", "earliest");
                cp.put("key.deserializer", StringDeserializer.class.getName());
                cp.put("value.deserializer", StringDeserializer.class.getName());
                KafkaConsumer<String, String> c = new KafkaConsumer<>(cp);
                c.subscribe(List.of(t));
                return c;
            };
            java.util.function.Function<KafkaConsumer<String, String>, String> readAll = c -> {
                int read = 0;
                long deadline = System.currentTimeMillis() + 30_000;
                try {
                    while (read < 60 && System.currentTimeMillis() < deadline) {
                        read += c.poll(Duration.ofMillis(200)).count();
                    }
                    return String.valueOf(read);
                } catch (Exception e) {
                    return e.getClass().getSimpleName() + ": " + e.getMessage();
                }
            };
            try {
                updateFeature(admin, "group.version",
                        new FeatureUpdate((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE));
                json.append("\"downgraded\": \"").append(finalized.get()).append("\"");
                try (KafkaConsumer<String, String> c = consumer.apply("consumer")) {
                    json.append(", \"consumer\": \"").append(readAll.apply(c)).append("\"");
                }
                try (KafkaConsumer<String, String> c = consumer.apply("classic")) {
                    json.append(", \"classic\": \"").append(readAll.apply(c)).append("\"");
                    String group = topic + "-classic-absent";
                    c.commitSync();
                    var described = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                    json.append(", \"described\": \"").append(described.type()).append(" ")
                            .append(described.groupState()).append(" ").append(described.members().size())
                            .append("\"");
                }
            } finally {
                // Level 1 again for the tests after this one, whatever happened.
                updateFeature(admin, "group.version",
                        new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE));
            }
            json.append(", \"upgraded\": \"").append(finalized.get()).append("\"");
            try (KafkaConsumer<String, String> c = consumer.apply("consumer")) {
                json.append(", \"consumer_again\": \"").append(readAll.apply(c)).append("\"");
            }
        }
        System.out.println(json.append("}"));
    }

    /** kafka-configs --entity-type broker-loggers: the admin client lists
     * the node's loggers, sets, refuses and deletes levels as Kafka 4.1.1
     * answers (there with log4j's logger names). It leaves
     * ringbroker::server::connection at DEBUG while a second admin client
     * connects and closes, then deletes that level again. */
    static void brokerLoggers(String bootstrap) throws Exception {
        // Kafka's names for the reference run: kafka.network.Processor, kafka.
        String logger = System.getenv().getOrDefault("JAVA_CLIENT_LOGGER", "ringbroker::server::connection");
        String parent = System.getenv().getOrDefault("JAVA_CLIENT_LOGGER_PARENT", "ringbroker::server");
        List<String> refusals = new ArrayList<>();
        Map<String, String> seen = new java.util.TreeMap<>();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            String node = admin.describeCluster().nodes().get().iterator().next().idString();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, node);
            java.util.function.Function<String, String> level = name -> {
                try {
                    var entry = admin.describeConfigs(List.of(resource)).all().get().get(resource).get(name);
                    return entry == null ? "absent" : entry.value();
                } catch (Exception e) {
                    return "error " + e.getCause();
                }
            };
            var all = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            var root = all.get("root");
            seen.put("root", root.value() + " " + root.source() + " " + root.isReadOnly() + " " + root.synonyms().size());
            seen.put("many", String.valueOf(all.entries().size() > 20));
            java.util.function.BiFunction<List<AlterConfigOp>, Boolean, String> alter = (ops, validateOnly) -> {
                try {
                    admin.incrementalAlterConfigs(Map.of(resource, ops),
                            new org.apache.kafka.clients.admin.AlterConfigsOptions().validateOnly(validateOnly)).all().get();
                    return "ok";
                } catch (Exception e) {
                    return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
                }
            };
            var set = AlterConfigOp.OpType.SET;
            java.util.function.BiFunction<String, String, AlterConfigOp> op =
                    (name, value) -> new AlterConfigOp(new ConfigEntry(name, value), set);
            for (var ops : List.of(
                    List.of(op.apply(logger, "debug")),
                    List.of(op.apply("kafka.server.KafkaApis", "DEBUG")),
                    List.of(op.apply(logger, "DEBUG"), op.apply("no.such.logger", "DEBUG")),
                    List.of(new AlterConfigOp(new ConfigEntry(logger, "DEBUG"), AlterConfigOp.OpType.APPEND)),
                    List.of(new AlterConfigOp(new ConfigEntry("root", null), AlterConfigOp.OpType.DELETE)))) {
                refusals.add(alter.apply(ops, false));
            }
            seen.put("after refusals", level.apply(logger));
            seen.put("validate only", alter.apply(List.of(op.apply(logger, "TRACE")), true) + " " + level.apply(logger));
            seen.put("parent", alter.apply(List.of(op.apply(parent, "FATAL")), false)
                    + " " + level.apply(parent) + " " + level.apply(logger) + " " + level.apply("root"));
            try {
                seen.put("set", alter.apply(List.of(op.apply(logger, "DEBUG")), false) + " " + level.apply(logger));
                try (Admin second = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
                    second.describeCluster().nodes().get();
                }
                Thread.sleep(500);
            } finally {
                var delete = AlterConfigOp.OpType.DELETE;
                seen.put("deleted", alter.apply(List.of(
                        new AlterConfigOp(new ConfigEntry(logger, null), delete),
                        new AlterConfigOp(new ConfigEntry(parent, null), delete)), false)
                        + " " + level.apply(logger));
            }
        }
        StringBuilder out = new StringBuilder("{\"refusals\": [");
        for (int i = 0; i < refusals.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(quote(refusals.get(i)));
        }
        out.append("]");
        seen.forEach((k, v) -> out.append(", ").append(quote(k)).append(": ").append(quote(v)));
        System.out.println(out.append("}"));
    }

    /**
     * `eligible.leader.replicas.version` (KIP-966) and `min.insync.replicas`
     * as `kafka-features` and `kafka-configs --entity-type brokers` see and
     * change them: while ELR is on the cluster-level value cannot be removed
     * and no broker may have its own; turning it off lifts both rules, and
     * turning it on again restores the cluster-level value and removes the
     * broker's. Each outcome "ok" or "Exception: message". Leaves ELR on and
     * the cluster-level value at 2.
     */
    static void elr(String bootstrap, String topic) throws Exception {
        Map<String, String> seen = new java.util.LinkedHashMap<>();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            String node = admin.describeCluster().nodes().get().iterator().next().idString();
            var cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
            var broker = new ConfigResource(ConfigResource.Type.BROKER, node);
            var key = "min.insync.replicas";
            java.util.function.BiFunction<ConfigResource, String, String> alter = (r, value) -> {
                var op = value == null
                        ? new AlterConfigOp(new ConfigEntry(key, null), AlterConfigOp.OpType.DELETE)
                        : new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
                try {
                    admin.incrementalAlterConfigs(Map.of(r, List.of(op))).all().get();
                    return "ok";
                } catch (Exception e) {
                    return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
                }
            };
            java.util.function.Function<ConfigResource, String> shown = r -> {
                try {
                    var entry = admin.describeConfigs(List.of(r)).all().get().get(r).get(key);
                    return entry == null ? "none" : entry.value() + " " + entry.source();
                } catch (Exception e) {
                    return kafkaCause(e);
                }
            };
            java.util.function.BiFunction<Short, FeatureUpdate.UpgradeType, String> feature = (level, type) ->
                    outcome(() -> admin.updateFeatures(Map.of("eligible.leader.replicas.version",
                            new FeatureUpdate(level, type)), new org.apache.kafka.clients.admin.UpdateFeaturesOptions()).all().get());
            seen.put("features", elrKept(bootstrap, topic));
            seen.put("topic", shown.apply(new ConfigResource(ConfigResource.Type.TOPIC, topic)));
            seen.put("broker", shown.apply(broker));
            seen.put("delete cluster", alter.apply(cluster, null));
            seen.put("set broker", alter.apply(broker, "2"));
            seen.put("delete broker", alter.apply(broker, null));
            seen.put("set cluster", alter.apply(cluster, "2"));
            seen.put("cluster after set", shown.apply(cluster));
            seen.put("downgrade", feature.apply((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE));
            seen.put("after downgrade", elrKept(bootstrap, topic));
            seen.put("set broker when off", alter.apply(broker, "3"));
            // Kafka's brokers take the controller's config records a moment later.
            long deadline = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < deadline && !shown.apply(broker).startsWith("3")) {
                Thread.sleep(100);
            }
            seen.put("broker when off", shown.apply(broker));
            seen.put("delete cluster when off", alter.apply(cluster, null));
            deadline = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < deadline && !shown.apply(cluster).equals("none")) {
                Thread.sleep(100);
            }
            seen.put("cluster when off", shown.apply(cluster));
            seen.put("upgrade", feature.apply((short) 1, FeatureUpdate.UpgradeType.UPGRADE));
            deadline = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < deadline
                    && (shown.apply(cluster).equals("none") || shown.apply(broker).startsWith("3"))) {
                Thread.sleep(100);
            }
            seen.put("cluster after upgrade", shown.apply(cluster));
            seen.put("broker after upgrade", shown.apply(broker));
            seen.put("set cluster again", alter.apply(cluster, "2"));
            seen.put("partitions", admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
                    .partitions().stream().map(p -> p.elr() + " " + p.lastKnownElr()).collect(Collectors.joining(",")));
        }
        StringBuilder out = new StringBuilder("{");
        seen.forEach((k, v) -> out.append(out.length() == 1 ? "" : ", ").append(quote(k)).append(": ").append(v.startsWith("{") ? v : quote(v)));
        System.out.println(out.append("}"));
    }

    /** The ELR level finalized and supported, and the cluster-level
     * `min.insync.replicas`, as JSON. */
    static String elrKept(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            var features = admin.describeFeatures().featureMetadata().get();
            var finalized = features.finalizedFeatures().get("eligible.leader.replicas.version");
            var supported = features.supportedFeatures().get("eligible.leader.replicas.version");
            var cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
            var entry = admin.describeConfigs(List.of(cluster)).all().get().get(cluster).get("min.insync.replicas");
            return "{\"finalized\": " + (finalized == null ? 0 : finalized.maxVersionLevel())
                    + ", \"supported\": " + quote(supported == null ? "none" : supported.minVersion() + "-" + supported.maxVersion())
                    + ", \"cluster\": " + quote(entry == null ? "none" : entry.value() + " " + entry.source()) + "}";
        }
    }

    /** Client-metrics subscriptions as `kafka-client-metrics` and
     * `kafka-configs --entity-type client-metrics` manage them (KIP-714):
     * created, changed (SET, APPEND, SUBTRACT), described, listed, refused
     * and deleted as Kafka 4.1.1 answers. Subscription `<name>` is deleted at
     * the end, `<name>-kept` is left for the caller (see clientMetricsKept). */
    static void clientMetrics(String bootstrap, String name) throws Exception {
        List<String> refusals = new ArrayList<>();
        Map<String, String> seen = new java.util.TreeMap<>();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            var type = ConfigResource.Type.CLIENT_METRICS;
            ConfigResource resource = new ConfigResource(type, name);
            java.util.function.BiFunction<ConfigResource, List<AlterConfigOp>, String> alter = (r, ops) -> {
                try {
                    admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
                    return "ok";
                } catch (Exception e) {
                    return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
                }
            };
            java.util.function.BiFunction<String, String, AlterConfigOp> set =
                    (key, value) -> new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
            seen.put("before", clientMetricsKept(bootstrap, name));
            seen.put("create", alter.apply(resource, List.of(
                    set.apply("metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator"),
                    set.apply("interval.ms", "1000"),
                    set.apply("match", "client_id=ring.*, client_software_name=apache-kafka-java"))));
            seen.put("created", clientMetricsKept(bootstrap, name));
            seen.put("append", alter.apply(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("metrics", "org.apache.kafka.consumer.fetch"), AlterConfigOp.OpType.APPEND))));
            seen.put("subtract", alter.apply(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("match", "client_id=ring.*"), AlterConfigOp.OpType.SUBTRACT))));
            for (var ops : List.of(
                    List.of(set.apply("interval.ms", "99")),
                    List.of(set.apply("interval.ms", "3600001")),
                    List.of(set.apply("interval.ms", "soon")),
                    List.of(set.apply("metric", "x")),
                    List.of(set.apply("match", "client_id")),
                    List.of(set.apply("match", "client_id=a=b")),
                    List.of(set.apply("match", "host=.*")),
                    List.of(set.apply("match", "client_id=[")),
                    List.of(new AlterConfigOp(new ConfigEntry("interval.ms", "5"), AlterConfigOp.OpType.APPEND)),
                    List.of(set.apply("interval.ms", "2000"), set.apply("match", "client_id=("))) ) {
                refusals.add(alter.apply(resource, ops));
            }
            refusals.add(alter.apply(new ConfigResource(type, ""), List.of(set.apply("interval.ms", "1000"))));
            seen.put("after refusals", clientMetricsKept(bootstrap, name));
            seen.put("describe empty name", outcome(() -> admin.describeConfigs(List.of(new ConfigResource(type, ""))).all().get()));
            var entry = admin.describeConfigs(List.of(resource)).all().get().get(resource).get("interval.ms");
            seen.put("entry", entry.source() + " " + entry.isReadOnly() + " " + entry.isSensitive() + " "
                    + entry.synonyms().size() + " " + entry.type() + " " + entry.documentation());
            seen.put("keys", String.valueOf(admin.describeConfigs(List.of(resource),
                    new org.apache.kafka.clients.admin.DescribeConfigsOptions()).all().get().get(resource).entries().size()));
            seen.put("kept", alter.apply(new ConfigResource(type, name + "-kept"), List.of(
                    set.apply("metrics", "*"), set.apply("interval.ms", "60000"))));
            var delete = AlterConfigOp.OpType.DELETE;
            seen.put("delete", alter.apply(resource, List.of(
                    new AlterConfigOp(new ConfigEntry("metrics", null), delete),
                    new AlterConfigOp(new ConfigEntry("interval.ms", null), delete),
                    new AlterConfigOp(new ConfigEntry("match", null), delete))));
            seen.put("deleted", clientMetricsKept(bootstrap, name));
            seen.put("delete again", alter.apply(resource, List.of(new AlterConfigOp(new ConfigEntry("metrics", null), delete))));
        }
        StringBuilder out = new StringBuilder("{\"refusals\": [");
        for (int i = 0; i < refusals.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(quote(refusals.get(i)));
        }
        out.append("]");
        seen.forEach((k, v) -> out.append(", ").append(quote(k)).append(": ").append(v.startsWith("{") ? v : quote(v)));
        System.out.println(out.append("}"));
    }

    /** Subscription `name`'s configs (sorted) and whether the client-metrics
     * listing holds it, as JSON. */
    static String clientMetricsKept(String bootstrap, String name) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, name);
            var configs = new java.util.TreeMap<String, String>();
            admin.describeConfigs(List.of(resource)).all().get().get(resource).entries()
                    .forEach(e -> configs.put(e.name(), e.value()));
            boolean listed = admin.listConfigResources(Set.of(ConfigResource.Type.CLIENT_METRICS),
                    new org.apache.kafka.clients.admin.ListConfigResourcesOptions()).all().get().contains(resource);
            StringBuilder out = new StringBuilder("{\"listed\": " + listed);
            configs.forEach((k, v) -> out.append(", ").append(quote(k)).append(": ").append(quote(v)));
            return out.append("}").toString();
        }
    }

    /** Share groups (KIP-932) with share groups off, as Kafka 4.1.1 has
     * them by default: a share consumer's poll, and the admin client's
     * share-group calls, each fail with what the cluster answered. */
    static void shareGroupsOff(String bootstrap, String topic) throws Exception {
        String group = topic + "-share";
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        StringBuilder json = new StringBuilder("{");
        try (var consumer = new org.apache.kafka.clients.consumer.KafkaShareConsumer<>(
                props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            String seen = "no error";
            for (int i = 0; i < 10 && seen.equals("no error"); i++) {
                try {
                    consumer.poll(Duration.ofSeconds(1));
                } catch (org.apache.kafka.common.KafkaException e) {
                    seen = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
            }
            json.append("\"poll\": ").append(quote(seen));
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            java.util.function.Function<org.apache.kafka.common.KafkaFuture<?>, String> outcome = future -> {
                try {
                    return "ok " + future.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            };
            json.append(", \"describe\": ").append(quote(outcome.apply(
                    admin.describeShareGroups(List.of(group)).all())));
            json.append(", \"offsets\": ").append(quote(outcome.apply(
                    admin.listShareGroupOffsets(Map.of(group,
                            new org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec())).all())));
            json.append(", \"delete_offsets\": ").append(quote(outcome.apply(
                    admin.deleteShareGroupOffsets(group, Set.of(topic)).all())));
            json.append(", \"listed\": ").append(quote(outcome.apply(
                    admin.listGroups(org.apache.kafka.clients.admin.ListGroupsOptions.forShareGroups()).all())));
        }
        System.out.println(json.append("}"));
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /** A consume-transform-produce loop with a subscribed group member:
     * sendOffsetsToTransaction carries the member id and generation
     * (TxnOffsetCommit v3+). Every third transaction is aborted and its
     * input re-read from the committed offsets. */
    static void copier(String bootstrap, String topic) throws Exception {
        String sink = topic + "-out";
        String group = topic + "-copier";
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(sink, PARTITIONS, (short) 1))).all().get();
        }
        int records = 200;
        Properties plain = new Properties();
        plain.put("bootstrap.servers", bootstrap);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(plain, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, "r" + i));
            }
        }
        Map<String, Object> consumerConfig = new HashMap<>();
        consumerConfig.put("bootstrap.servers", bootstrap);
        consumerConfig.put("group.id", group);
        consumerConfig.put("isolation.level", "read_committed");
        consumerConfig.put("enable.auto.commit", "false");
        consumerConfig.put("auto.offset.reset", "earliest");
        consumerConfig.put("max.poll.records", "20");
        Properties txnConfig = new Properties();
        txnConfig.put("bootstrap.servers", bootstrap);
        txnConfig.put("transactional.id", topic + "-copier-txn");
        int copied = 0;
        int aborts = 0;
        long committedTotal = 0;
        try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(consumerConfig, new StringDeserializer(), new StringDeserializer());
                KafkaProducer<String, String> producer =
                        new KafkaProducer<>(txnConfig, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            int transactions = 0;
            while (copied < records && System.currentTimeMillis() < deadline) {
                var polled = consumer.poll(Duration.ofMillis(200));
                if (polled.isEmpty()) {
                    continue;
                }
                transactions++;
                producer.beginTransaction();
                Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> record : polled) {
                    producer.send(new ProducerRecord<>(sink, record.partition(), null, "copy-" + record.value()));
                    offsets.put(new TopicPartition(record.topic(), record.partition()),
                            new org.apache.kafka.clients.consumer.OffsetAndMetadata(record.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (transactions % 3 == 0) {
                    producer.flush();
                    producer.abortTransaction();
                    aborts++;
                    var committed = consumer.committed(offsets.keySet());
                    for (TopicPartition tp : offsets.keySet()) {
                        var at = committed.get(tp);
                        consumer.seek(tp, at == null ? 0 : at.offset());
                    }
                } else {
                    producer.commitTransaction();
                    copied += polled.count();
                }
            }
            var committed = consumer.committed(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            for (var at : committed.values()) {
                committedTotal += at == null ? 0 : at.offset();
            }
        }
        List<String> out = read(bootstrap, sink, "read_committed", records);
        System.out.printf("{\"copied\": %d, \"aborts\": %d, \"committed_offsets\": %d, \"read_committed\": %d, \"read_committed_distinct\": %d}%n",
                copied, aborts, committedTotal, out.size(), out.stream().distinct().count());
    }

    /** Every record value from the start of both partitions: stops after
     * `expected` values plus a quiet second, or after 20 s. */
    static List<String> read(String bootstrap, String topic, String isolation, int expected) {
        return read(Map.of("bootstrap.servers", bootstrap), topic, isolation, expected);
    }

    /** {@link #read(String, String, String, int)} with a consumer made from `base`. */
    static List<String> read(Map<String, Object> base, String topic, String isolation, int expected) {
        Map<String, Object> config = new HashMap<>(base);
        config.put("isolation.level", isolation);
        config.put("enable.auto.commit", "false");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(topic, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.currentTimeMillis() + 20_000;
            long quietSince = System.currentTimeMillis();
            while (System.currentTimeMillis() < deadline) {
                var records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> record : records) {
                    values.add(record.value());
                    quietSince = System.currentTimeMillis();
                }
                if (values.size() >= expected && System.currentTimeMillis() - quietSince > 1000) {
                    break;
                }
            }
        }
        Collections.sort(values);
        return values;
    }
}
