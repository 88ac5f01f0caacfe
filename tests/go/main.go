// franzclient drives a broker with franz-go (kgo and kadm), the Go client,
// and prints what it saw as one JSON line on stdout. tests/python/test_franz_go.py
// runs it against ringbroker; the same program run against Apache Kafka 4.1.1
// printed what those tests expect.
//
// Usage: franzclient MODE BOOTSTRAP TOPIC
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: franzclient MODE BOOTSTRAP TOPIC")
		os.Exit(2)
	}
	mode, bootstrap, topic := os.Args[1], os.Args[2], os.Args[3]
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	modes := map[string]func(context.Context, string, string) (map[string]any, error){
		"produce-consume": produceConsume,
		"group":           func(ctx context.Context, b, t string) (map[string]any, error) { return group(ctx, b, t, false) },
		"group-848":       func(ctx context.Context, b, t string) (map[string]any, error) { return group(ctx, b, t, true) },
		"transactions":    transactions,
		"admin":           admin,
		"token":           token,
	}
	run, ok := modes[mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		os.Exit(2)
	}
	seen, err := run(ctx, bootstrap, topic)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", mode, err)
		os.Exit(1)
	}
	out, _ := json.Marshal(seen)
	fmt.Println(string(out))
}

func newAdmin(bootstrap string) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// produceConsume writes 2500 keyed records with headers through five
// idempotent producers (franz-go's default: acks=all, idempotence on), one
// per compression codec, then reads the topic back with a group consumer
// and compares every record with what was acknowledged.
func produceConsume(ctx context.Context, bootstrap, topic string) (map[string]any, error) {
	adm, acl, err := newAdmin(bootstrap)
	if err != nil {
		return nil, err
	}
	defer acl.Close()
	if err := createTopic(ctx, adm, topic, 3, nil); err != nil {
		return nil, err
	}
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	acked := map[string]string{}
	for name, codec := range codecs {
		p, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			return nil, err
		}
		var records []*kgo.Record
		for i := 0; i < 500; i++ {
			key := fmt.Sprintf("%s-%d", name, i)
			records = append(records, &kgo.Record{
				Key:     []byte(key),
				Value:   []byte(strings.Repeat(key, 1+i%7)),
				Headers: []kgo.RecordHeader{{Key: "codec", Value: []byte(name)}, {Key: "i", Value: []byte(fmt.Sprint(i))}},
			})
		}
		results := p.ProduceSync(ctx, records...)
		p.Close()
		for _, r := range results {
			if r.Err != nil {
				return nil, fmt.Errorf("produce %s: %w", name, r.Err)
			}
			acked[string(r.Record.Key)] = fmt.Sprintf("%d@%d", r.Record.Partition, r.Record.Offset)
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumerGroup(topic+"-readers"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	read, mismatched := 0, 0
	distinct := map[string]bool{}
	for read < len(acked) {
		fetches := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %d of %d: %w", read, len(acked), err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("fetch: %v", errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			read++
			key := string(r.Key)
			distinct[key] = true
			dash := strings.LastIndexByte(key, '-')
			var i int
			fmt.Sscan(key[dash+1:], &i)
			ok := acked[key] == fmt.Sprintf("%d@%d", r.Partition, r.Offset) &&
				string(r.Value) == strings.Repeat(key, 1+i%7) &&
				len(r.Headers) == 2 && string(r.Headers[0].Value) == key[:dash] &&
				string(r.Headers[1].Value) == key[dash+1:]
			if !ok {
				mismatched++
			}
		})
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		return nil, err
	}
	committed, err := adm.FetchOffsets(ctx, topic+"-readers")
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	atEnd := true
	ends.Each(func(o kadm.ListedOffset) {
		got, _ := committed.Lookup(topic, o.Partition)
		atEnd = atEnd && got.At == o.Offset
	})
	return map[string]any{"acked": len(acked), "read": read, "distinct": len(distinct),
		"mismatched": mismatched, "committed_at_end": atEnd}, nil
}

// group runs two members of one group over a four-partition topic (the
// classic protocol with franz-go's default cooperative-sticky balancer, or
// KIP-848's server-side assignment), reads 400 records between them, and
// then lets a third member, alone in the group, read what came after.
func group(ctx context.Context, bootstrap, topic string, serverSide bool) (map[string]any, error) {
	adm, acl, err := newAdmin(bootstrap)
	if err != nil {
		return nil, err
	}
	defer acl.Close()
	if err := createTopic(ctx, adm, topic, 4, nil); err != nil {
		return nil, err
	}
	produce := func(from, to int) error {
		p, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			return err
		}
		defer p.Close()
		var records []*kgo.Record
		for i := from; i < to; i++ {
			records = append(records, &kgo.Record{Partition: int32(i % 4), Value: []byte(fmt.Sprint(i))})
		}
		return p.ProduceSync(ctx, records...).FirstErr()
	}
	groupID := topic + "-group"
	// How many partitions each member holds, as its callbacks tell it.
	var held [3]atomic.Int32
	member := func(m int) (*kgo.Client, error) {
		count := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) int32 { return int32(len(ps[topic])) }
		opts := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
			kgo.OnPartitionsAssigned(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
				held[m].Add(count(ctx, cl, ps))
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
				held[m].Add(-count(ctx, cl, ps))
			}),
			kgo.OnPartitionsLost(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
				held[m].Add(-count(ctx, cl, ps))
			})}
		if serverSide {
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
		}
		return kgo.NewClient(opts...)
	}
	a, err := member(0)
	if err != nil {
		return nil, err
	}
	b, err := member(1)
	if err != nil {
		return nil, err
	}
	// Both members hold two partitions each before anything is written;
	// polling drives the classic protocol's rebalance callbacks.
	deadline := time.Now().Add(60 * time.Second)
	for held[0].Load() != 2 || held[1].Load() != 2 {
		for _, cl := range []*kgo.Client{a, b} {
			pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
			cl.PollFetches(pctx)
			pcancel()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("members hold %d and %d partitions", held[0].Load(), held[1].Load())
		}
	}
	if err := produce(0, 400); err != nil {
		return nil, err
	}
	values := map[string]int{}
	byMember := []map[int32]bool{{}, {}}
	deadline = time.Now().Add(60 * time.Second)
	// Poll both until all 400 are read and each member holds two partitions.
	for {
		for m, cl := range []*kgo.Client{a, b} {
			pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fetches := cl.PollFetches(pctx)
			pcancel()
			fetches.EachRecord(func(r *kgo.Record) {
				values[string(r.Value)]++
				byMember[m][r.Partition] = true
			})
		}
		if len(values) == 400 && len(byMember[0]) == 2 && len(byMember[1]) == 2 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("read %d distinct, partitions per member %d/%d", len(values), len(byMember[0]), len(byMember[1]))
		}
	}
	duplicates := 0
	for _, n := range values {
		duplicates += n - 1
	}
	described, err := adm.DescribeGroups(ctx, groupID)
	if err != nil {
		return nil, err
	}
	dg := described[groupID]
	classic := fmt.Sprintf("%s/%d/%s", dg.State, len(dg.Members), errName(dg.Err))
	next, err := adm.DescribeConsumerGroups(ctx, groupID)
	if err != nil {
		return nil, err
	}
	cg := next[groupID]
	consumer := fmt.Sprintf("%s/%d/%s", cg.State, len(cg.Members), errName(cg.Err))
	for _, cl := range []*kgo.Client{a, b} {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return nil, err
		}
	}
	a.Close()
	b.Close()
	if err := produce(400, 440); err != nil {
		return nil, err
	}
	c, err := member(2)
	if err != nil {
		return nil, err
	}
	after := map[string]bool{}
	for len(after) < 40 {
		fetches := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("third member read %d: %w", len(after), err)
		}
		fetches.EachRecord(func(r *kgo.Record) { after[string(r.Value)] = true })
	}
	// Anything more within a second would be a record read twice.
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	extra := c.PollFetches(pctx).NumRecords()
	pcancel()
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		return nil, err
	}
	c.Close()
	sorted := make([]string, 0, len(after))
	for v := range after {
		sorted = append(sorted, v)
	}
	sort.Strings(sorted)
	lag, err := adm.Lag(ctx, groupID)
	if err != nil {
		return nil, err
	}
	total := int64(-1)
	if l, ok := lag[groupID]; ok && l.FetchErr == nil {
		total = l.Lag.Total()
	}
	return map[string]any{"distinct": len(values), "duplicates": duplicates,
		"partitions_per_member": []int{len(byMember[0]), len(byMember[1])},
		"described":             classic, "described_consumer": consumer, "after": len(after), "after_first": sorted[0],
		"extra": extra, "lag": total}, nil
}

// transactions runs ten transactions of ten records on one transactional
// producer, aborting every third, and then an exactly-once copier
// (GroupTransactSession) that copies the committed records to a second
// topic; read_committed and read_uncommitted readers count what they see.
func transactions(ctx context.Context, bootstrap, topic string) (map[string]any, error) {
	adm, acl, err := newAdmin(bootstrap)
	if err != nil {
		return nil, err
	}
	defer acl.Close()
	out := topic + "-copy"
	for _, t := range []string{topic, out} {
		if err := createTopic(ctx, adm, t, 2, nil); err != nil {
			return nil, err
		}
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.TransactionalID(topic+"-txn"))
	if err != nil {
		return nil, err
	}
	committed, aborted := 0, 0
	for t := 0; t < 10; t++ {
		if err := p.BeginTransaction(); err != nil {
			return nil, err
		}
		var records []*kgo.Record
		for i := 0; i < 10; i++ {
			records = append(records, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("t%d-%d", t, i))})
		}
		if err := p.ProduceSync(ctx, records...).FirstErr(); err != nil {
			return nil, err
		}
		commit := kgo.TryCommit
		if t%3 == 2 {
			commit = kgo.TryAbort
			aborted += 10
		} else {
			committed += 10
		}
		if err := p.EndTransaction(ctx, commit); err != nil {
			return nil, err
		}
	}
	p.Close()
	count := func(t string, level kgo.IsolationLevel, want int) (int, int, error) {
		c, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(t),
			kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		n, abortedSeen := 0, 0
		for {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			fetches := c.PollFetches(pctx)
			pcancel()
			fetches.EachRecord(func(r *kgo.Record) {
				n++
				var tx, i int
				fmt.Sscanf(string(r.Value), "t%d-%d", &tx, &i)
				if tx%3 == 2 {
					abortedSeen++
				}
			})
			if fetches.Empty() && n >= want {
				return n, abortedSeen, nil
			}
			if ctx.Err() != nil {
				return n, abortedSeen, ctx.Err()
			}
		}
	}
	rc, rcAborted, err := count(topic, kgo.ReadCommitted(), committed)
	if err != nil {
		return nil, err
	}
	ru, _, err := count(topic, kgo.ReadUncommitted(), committed+aborted)
	if err != nil {
		return nil, err
	}
	// The exactly-once copier: consume the committed input as a group member,
	// produce each record to the copy topic and commit the offsets in the
	// same transaction.
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(out),
		kgo.TransactionalID(topic+"-copier"), kgo.ConsumerGroup(topic+"-copiers"), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequireStableFetchOffsets())
	if err != nil {
		return nil, err
	}
	copied := 0
	for copied < committed {
		fetches := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("copied %d: %w", copied, ctx.Err())
		}
		if fetches.Empty() {
			continue
		}
		if err := sess.Begin(); err != nil {
			return nil, err
		}
		var records []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			records = append(records, &kgo.Record{Key: r.Key, Value: r.Value})
		})
		if err := sess.ProduceSync(ctx, records...).FirstErr(); err != nil {
			return nil, err
		}
		ok, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return nil, err
		}
		if ok {
			copied += len(records)
		}
	}
	sess.Close()
	copies, _, err := count(out, kgo.ReadCommitted(), committed)
	if err != nil {
		return nil, err
	}
	offsets, err := adm.FetchOffsets(ctx, topic+"-copiers")
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	// franz-go commits the offset after the last record it read; the
	// partition's last transaction marker stands between that and the end.
	behindEnd := make([]int64, 2)
	ends.Each(func(o kadm.ListedOffset) {
		got, _ := offsets.Lookup(topic, o.Partition)
		behindEnd[o.Partition] = o.Offset - got.At
	})
	return map[string]any{"committed": committed, "aborted": aborted, "read_committed": rc,
		"read_committed_aborted": rcAborted, "read_uncommitted": ru, "copied": copies,
		"copier_offsets_behind_end": behindEnd}, nil
}

// admin walks kadm through a topic's life: create with configs, describe
// and alter them, add partitions, list offsets, delete records, list and
// describe groups and the cluster, delete the topic.
func admin(ctx context.Context, bootstrap, topic string) (map[string]any, error) {
	adm, acl, err := newAdmin(bootstrap)
	if err != nil {
		return nil, err
	}
	defer acl.Close()
	seen := map[string]any{}
	retention := "3600000"
	if err := createTopic(ctx, adm, topic, 2, map[string]*string{"retention.ms": &retention}); err != nil {
		return nil, err
	}
	again, err := adm.CreateTopic(ctx, 2, 1, nil, topic)
	if err == nil {
		err = again.Err
	}
	seen["create_again"] = errName(err)
	bad, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": ptr("sideways")}, topic+"-bad")
	if err == nil {
		err = bad.Err
	}
	seen["create_bad_config"] = errName(err)
	config := func() (map[string]string, error) {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return nil, err
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			return nil, err
		}
		if rc.Err != nil {
			return nil, rc.Err
		}
		got := map[string]string{}
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" || c.Key == "cleanup.policy" || c.Key == "max.message.bytes" {
				got[c.Key] = c.MaybeValue() + "/" + c.Source.String()
			}
		}
		return got, nil
	}
	if seen["configs_created"], err = config(); err != nil {
		return nil, err
	}
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptr("65536")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, topic)
	if err != nil {
		return nil, err
	}
	for _, a := range altered {
		if a.Err != nil {
			return nil, a.Err
		}
	}
	if seen["configs_altered"], err = config(); err != nil {
		return nil, err
	}
	wrong, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: ptr("1")}}, topic)
	if err == nil && len(wrong) == 1 {
		err = wrong[0].Err
	}
	seen["alter_unknown_config"] = errName(err)
	added, err := adm.CreatePartitions(ctx, 2, topic)
	if err != nil {
		return nil, err
	}
	if r, ok := added[topic]; ok && r.Err != nil {
		return nil, r.Err
	}
	fewer, err := adm.UpdatePartitions(ctx, 1, topic)
	if err == nil {
		err = fewer[topic].Err
	}
	seen["shrink_partitions"] = errName(err)
	p, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	var records []*kgo.Record
	for i := 0; i < 40; i++ {
		records = append(records, &kgo.Record{Partition: int32(i % 4), Value: []byte("v"),
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)*1000)})
	}
	if err := p.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return nil, err
	}
	p.Close()
	deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 4}}})
	if err != nil {
		return nil, err
	}
	if r, ok := deleted.Lookup(topic, 0); !ok || r.Err != nil {
		return nil, fmt.Errorf("delete records: %v", r.Err)
	}
	listed := func(l kadm.ListedOffsets, err error) ([]int64, error) {
		if err != nil {
			return nil, err
		}
		out := make([]int64, 4)
		l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return out, l.Error()
	}
	if seen["start_offsets"], err = listed(adm.ListStartOffsets(ctx, topic)); err != nil {
		return nil, err
	}
	if seen["end_offsets"], err = listed(adm.ListEndOffsets(ctx, topic)); err != nil {
		return nil, err
	}
	if seen["offsets_after_ts"], err = listed(adm.ListOffsetsAfterMilli(ctx, 1_700_000_020_000, topic)); err != nil {
		return nil, err
	}
	meta, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td := meta.Topics[topic]
	seen["partitions"] = len(td.Partitions)
	seen["topic_id_set"] = td.ID != [16]byte{}
	seen["brokers"] = len(meta.Brokers)
	seen["cluster_id_set"] = meta.Cluster != ""
	seen["controller_is_broker"] = meta.Controller == meta.Brokers[0].NodeID
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	seen["listed"] = topics.Has(topic)
	dresp, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	seen["delete"] = errName(dresp[topic].Err)
	dresp, err = adm.DeleteTopics(ctx, topic+"-never")
	if err == nil {
		err = dresp[topic+"-never"].Err
	}
	seen["delete_missing"] = errName(err)
	// A new client: kadm answers metadata from its client's cache.
	fresh, fcl, err := newAdmin(bootstrap)
	if err != nil {
		return nil, err
	}
	defer fcl.Close()
	if topics, err = fresh.ListTopics(ctx); err != nil {
		return nil, err
	}
	seen["listed_after_delete"] = topics.Has(topic)
	return seen, nil
}

// token has alice (SCRAM-SHA-256, alice-secret) ask for a delegation token,
// then logs in with it (scram.Auth's IsToken: the tokenauth extension), with
// either mechanism: creates the topic, produces 10 records and reads them
// back, and asks for the tokens it may see (refused on a token session).
func token(ctx context.Context, bootstrap, topic string) (map[string]any, error) {
	alice, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	if err != nil {
		return nil, err
	}
	defer alice.Close()
	create := kmsg.NewPtrCreateDelegationTokenRequest()
	create.MaxLifetimeMillis = -1
	created, err := create.RequestWith(ctx, alice)
	if err != nil {
		return nil, err
	}
	seen := map[string]any{
		"created": errName(kerr.ErrorForCode(created.ErrorCode)),
		"owner":   created.PrincipalType + ":" + created.PrincipalName,
	}
	hmac := base64.StdEncoding.EncodeToString(created.HMAC)
	// Kafka's broker learns of the token from metadata it replays, a
	// moment after the controller made it.
	time.Sleep(2 * time.Second)
	for i, mechanism := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		auth := scram.Auth{User: created.TokenID, Pass: hmac, IsToken: true}
		sasl := auth.AsSha256Mechanism()
		if mechanism == "SCRAM-SHA-512" {
			sasl = auth.AsSha512Mechanism()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.SASL(sasl))
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		if i == 0 {
			if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, nil); err != nil {
				return nil, err
			}
		}
		for r := 0; r < 5; r++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", mechanism, r))}).FirstErr(); err != nil {
				return nil, err
			}
		}
		describe := kmsg.NewPtrDescribeDelegationTokenRequest()
		described, err := describe.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		seen[mechanism+" describes"] = errName(kerr.ErrorForCode(described.ErrorCode))
	}
	reader, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.SASL(scram.Auth{User: created.TokenID, Pass: hmac, IsToken: true}.AsSha512Mechanism()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	read := 0
	for read < 10 {
		fetches := reader.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			return nil, err
		}
		read += fetches.NumRecords()
	}
	seen["read"] = read
	wrong, err := kgo.NewClient(kgo.SeedBrokers(bootstrap),
		kgo.SASL(scram.Auth{User: created.TokenID, Pass: "wrong", IsToken: true}.AsSha256Mechanism()))
	if err != nil {
		return nil, err
	}
	defer wrong.Close()
	seen["wrong hmac"] = errName(wrong.Ping(ctx))
	return seen, nil
}

func ptr(s string) *string { return &s }

// errName names a Kafka error as the protocol does, "" for none.
func errName(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}
