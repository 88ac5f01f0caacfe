import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * A Kafka Streams application for tests/python/test_kafka_streams.py:
 *
 *   StreamsApp BOOTSTRAP APPLICATION_ID LINES DICTIONARY OUT GUARANTEE STATE_DIR
 *
 * Splits each line of LINES into words and keeps three counts, each in a
 * RocksDB store with a changelog topic, reached through a repartition
 * topic, and written to a topic of its own:
 *   OUT             word -> times seen;
 *   OUT-hourly      "word@windowStartMs" -> times seen in that hour
 *                   (a windowed store: its changelog is compact,delete);
 *   OUT-categories  category -> words seen of it, the category looked up
 *                   in DICTIONARY (word -> category) through a GlobalKTable.
 * Counts are written as 8-byte big-endian longs. Prints "STATE <state>" at
 * each state change and "TASKS <active task ids>" on entering RUNNING;
 * runs until killed (SIGTERM closes it).
 */
public class StreamsApp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], applicationId = args[1], lines = args[2], dictionary = args[3],
            out = args[4], guarantee = args[5], stateDir = args[6];
        Properties config = new Properties();
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        config.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        config.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        // Every update reaches the output (no caching), so the last value
        // per key is the count.
        config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // Streams deletes what it has read from its repartition topics
        // (DeleteRecords) this often; 30 s by default.
        config.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
        config.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
        config.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> words = builder.<String, String>stream(lines)
            .flatMapValues(line -> Arrays.asList(line.split(" ")));
        words.groupBy((key, word) -> word)
            .count(Materialized.as("counts"))
            .toStream()
            .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        words.groupBy((key, word) -> word)
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofHours(1), Duration.ofHours(1)))
            .count(Materialized.as("hourly"))
            .toStream((window, count) -> window.key() + "@" + window.window().start())
            .to(out + "-hourly", Produced.with(Serdes.String(), Serdes.Long()));
        GlobalKTable<String, String> categories = builder.globalTable(dictionary);
        words.join(categories, (key, word) -> word, (word, category) -> category)
            .groupBy((key, category) -> category)
            .count(Materialized.as("categories"))
            .toStream()
            .to(out + "-categories", Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), config);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            if (now == KafkaStreams.State.RUNNING) {
                TreeSet<String> tasks = new TreeSet<>();
                streams.metadataForLocalThreads().forEach(thread ->
                    thread.activeTasks().forEach(task -> tasks.add(task.taskId().toString())));
                System.out.println("TASKS " + String.join(",", tasks));
            }
            System.out.flush();
        });
        streams.setUncaughtExceptionHandler(error -> {
            System.out.println("ERROR " + error);
            error.printStackTrace(System.out);
            System.out.flush();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20))));
        streams.start();
        Thread.sleep(Long.MAX_VALUE);
    }
}
