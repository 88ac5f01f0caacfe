// kafkajs_client.js drives a broker with KafkaJS, the Node.js client, and
// prints what it saw as one JSON line on stdout. tests/python/test_kafkajs.py
// runs it against ringbroker; the same program run against Apache Kafka 4.1.1
// printed what those tests expect.
//
// Usage: node kafkajs_client.js MODE BOOTSTRAP TOPIC
'use strict'

const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

const [mode, bootstrap, topic] = process.argv.slice(2)
const kafka = new Kafka({
  clientId: 'ringbroker-tests',
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { retries: 8 },
})

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function withAdmin(fn) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

async function waitFor(what, predicate, ms = 60000) {
  const deadline = Date.now() + ms
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

// An idempotent producer writes 1000 keyed records with headers, half of
// them gzip-compressed; a group consumer reads them back and every record is
// compared with what was acknowledged.
async function produceConsume() {
  await withAdmin((admin) => admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true }))
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const acked = new Set()
  for (const [codec, compression] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]]) {
    for (let batch = 0; batch < 10; batch++) {
      const messages = []
      for (let i = batch * 50; i < (batch + 1) * 50; i++) {
        const key = `${codec}-${i}`
        messages.push({ key, value: key.repeat(1 + (i % 7)), headers: { codec, i: String(i) } })
      }
      await producer.send({ topic, messages, compression, acks: -1 })
      for (const m of messages) acked.add(m.key)
    }
  }
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `${topic}-readers`, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let read = 0
  let mismatched = 0
  const distinct = new Set()
  const offsets = new Map()
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      read++
      const key = message.key.toString()
      distinct.add(key)
      const dash = key.lastIndexOf('-')
      const i = Number(key.slice(dash + 1))
      const ok = acked.has(key) &&
        message.value.toString() === key.repeat(1 + (i % 7)) &&
        message.headers.codec.toString() === key.slice(0, dash) &&
        message.headers.i.toString() === String(i)
      if (!ok) mismatched++
      const seen = offsets.get(partition) || []
      seen.push(Number(message.offset))
      offsets.set(partition, seen)
    },
  })
  await waitFor('every record', () => read >= acked.size)
  await sleep(500)
  await consumer.disconnect()
  // Offsets in each partition run 0, 1, 2, ... with no gap or repeat.
  let dense = true
  for (const seen of offsets.values()) seen.forEach((o, idx) => { dense = dense && o === idx })
  const committed = await withAdmin(async (admin) => {
    const [fetched] = await admin.fetchOffsets({ groupId: `${topic}-readers`, topics: [topic] })
    const ends = await admin.fetchTopicOffsets(topic)
    return fetched.partitions.every((p) => p.offset === ends.find((e) => e.partition === p.partition).high)
  })
  return { acked: acked.size, read, distinct: distinct.size, mismatched, dense, committed_at_end: committed }
}

// Two members of one group share a four-partition topic; after they leave,
// a third member reads only what came after their commits.
async function group() {
  await withAdmin((admin) => admin.createTopics({ topics: [{ topic, numPartitions: 4 }], waitForLeaders: true }))
  const producer = kafka.producer()
  await producer.connect()
  const produce = async (from, to) => {
    const messages = []
    for (let i = from; i < to; i++) messages.push({ partition: i % 4, value: String(i) })
    await producer.send({ topic, messages })
  }
  const groupId = `${topic}-group`
  const values = new Map()
  const byMember = [new Set(), new Set()]
  const members = []
  const assigned = [0, 0]
  for (const m of [0, 1]) {
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, rebalanceTimeout: 10000 })
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      assigned[m] = (payload.memberAssignment[topic] || []).length
    })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const v = message.value.toString()
        values.set(v, (values.get(v) || 0) + 1)
        byMember[m].add(partition)
      },
    })
    members.push(consumer)
  }
  // Both members hold two partitions each before anything is written.
  await waitFor('the assignment', () => assigned[0] === 2 && assigned[1] === 2)
  await produce(0, 400)
  await waitFor('both members reading', () => values.size === 400 && byMember[0].size > 0 && byMember[1].size > 0)
  const described = await withAdmin(async (admin) => {
    const { groups } = await admin.describeGroups([groupId])
    const listed = await admin.listGroups()
    return {
      state: groups[0].state,
      members: groups[0].members.length,
      protocol: groups[0].protocol,
      listed: listed.groups.some((g) => g.groupId === groupId),
    }
  })
  await sleep(500)
  for (const consumer of members) await consumer.disconnect()
  let duplicates = 0
  for (const n of values.values()) duplicates += n - 1
  await produce(400, 440)
  await producer.disconnect()
  const after = new Set()
  let repeats = 0
  const third = kafka.consumer({ groupId, maxWaitTimeInMs: 200 })
  await third.connect()
  await third.subscribe({ topic, fromBeginning: true })
  await third.run({
    eachMessage: async ({ message }) => {
      const v = message.value.toString()
      if (after.has(v) || Number(v) < 400) repeats++
      after.add(v)
    },
  })
  await waitFor('the third member', () => after.size >= 40)
  await sleep(1000)
  await third.disconnect()
  const lag = await withAdmin(async (admin) => {
    const [fetched] = await admin.fetchOffsets({ groupId, topics: [topic] })
    const ends = await admin.fetchTopicOffsets(topic)
    return fetched.partitions.reduce((sum, p) =>
      sum + Number(ends.find((e) => e.partition === p.partition).high) - Number(p.offset), 0)
  })
  const emptied = await withAdmin(async (admin) => (await admin.describeGroups([groupId])).groups[0].state)
  return {
    distinct: values.size, duplicates, partitions_per_member: [byMember[0].size, byMember[1].size],
    ...described, after: after.size, repeats, lag, emptied,
  }
}

// A transactional producer commits seven transactions of ten records and
// aborts three; a consume-transform-produce copier commits its input offsets
// with its output (sendOffsets). read_committed readers see only the
// committed records.
async function transactions() {
  const out = `${topic}-copy`
  await withAdmin((admin) => admin.createTopics({
    topics: [{ topic, numPartitions: 2 }, { topic: out, numPartitions: 2 }], waitForLeaders: true,
  }))
  const producer = kafka.producer({ transactionalId: `${topic}-txn`, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  let committed = 0
  let aborted = 0
  for (let t = 0; t < 10; t++) {
    const txn = await producer.transaction()
    const messages = []
    for (let i = 0; i < 10; i++) messages.push({ key: String(i), value: `t${t}-${i}` })
    await txn.send({ topic, messages })
    if (t % 3 === 2) {
      await txn.abort()
      aborted += 10
    } else {
      await txn.commit()
      committed += 10
    }
  }
  await producer.disconnect()
  const count = async (name, readUncommitted, want) => {
    const consumer = kafka.consumer({ groupId: `${name}-${readUncommitted}-${Date.now()}`, readUncommitted, maxWaitTimeInMs: 200 })
    await consumer.connect()
    await consumer.subscribe({ topic: name, fromBeginning: true })
    let n = 0
    let abortedSeen = 0
    await consumer.run({
      eachMessage: async ({ message }) => {
        n++
        const t = Number(message.value.toString().slice(1).split('-')[0])
        if (t % 3 === 2) abortedSeen++
      },
    })
    await waitFor(`${want} records of ${name}`, () => n >= want)
    await sleep(1000)
    await consumer.disconnect()
    return [n, abortedSeen]
  }
  const [rc, rcAborted] = await count(topic, false, committed)
  const [ru] = await count(topic, true, committed + aborted)
  // The copier: each batch it reads is produced to the copy topic and its
  // offsets committed for the copier group, in one transaction.
  const copierGroup = `${topic}-copiers`
  const copier = kafka.producer({ transactionalId: `${topic}-copier`, idempotent: true, maxInFlightRequests: 1 })
  await copier.connect()
  const input = kafka.consumer({ groupId: copierGroup, readUncommitted: false, maxWaitTimeInMs: 200 })
  await input.connect()
  await input.subscribe({ topic, fromBeginning: true })
  let copied = 0
  await input.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      if (batch.messages.length === 0) return
      const txn = await copier.transaction()
      await txn.send({ topic: out, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) })
      const last = batch.messages[batch.messages.length - 1]
      await txn.sendOffsets({
        consumerGroupId: copierGroup,
        topics: [{ topic, partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }] }],
      })
      await txn.commit()
      copied += batch.messages.length
    },
  })
  await waitFor('the copier', () => copied >= committed)
  await sleep(500)
  await input.disconnect()
  await copier.disconnect()
  const [copies] = await count(out, false, committed)
  const behindEnd = await withAdmin(async (admin) => {
    const [fetched] = await admin.fetchOffsets({ groupId: copierGroup, topics: [topic] })
    const ends = await admin.fetchTopicOffsets(topic)
    return fetched.partitions.sort((a, b) => a.partition - b.partition).map((p) =>
      Number(ends.find((e) => e.partition === p.partition).high) - Number(p.offset))
  })
  return { committed, aborted, read_committed: rc, read_committed_aborted: rcAborted, read_uncommitted: ru, copied: copies, copier_offsets_behind_end: behindEnd }
}

// The admin client walks a topic's life: create, describe and alter its
// configs, add partitions, list offsets (by time too), delete records,
// describe the cluster, delete the topic.
async function admin() {
  return withAdmin(async (admin) => {
    const seen = {}
    seen.created = await admin.createTopics({
      topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
      waitForLeaders: true,
    })
    seen.created_again = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] })
    try {
      await admin.createTopics({ topics: [{ topic: `${topic}-bad`, configEntries: [{ name: 'cleanup.policy', value: 'sideways' }] }] })
      seen.create_bad_config = ''
    } catch (e) {
      seen.create_bad_config = e.errors ? e.errors.map((x) => x.type).join(',') : e.type || e.name
    }
    const configs = async () => {
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2, name: topic, configNames: ['retention.ms', 'cleanup.policy', 'max.message.bytes'] }],
      })
      const got = {}
      for (const c of resources[0].configEntries) got[c.configName] = `${c.configValue}/${c.isDefault}/${c.configSource}`
      return got
    }
    seen.configs_created = await configs()
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: 2, name: topic, configEntries: [{ name: 'max.message.bytes', value: '65536' }] }],
    })
    seen.configs_altered = await configs()
    try {
      await admin.alterConfigs({ resources: [{ type: 2, name: topic, configEntries: [{ name: 'no.such.config', value: '1' }] }] })
      seen.alter_unknown_config = ''
    } catch (e) {
      seen.alter_unknown_config = e.type || e.name
    }
    await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
    try {
      await admin.createPartitions({ topicPartitions: [{ topic, count: 1 }] })
      seen.shrink_partitions = ''
    } catch (e) {
      seen.shrink_partitions = e.type || e.name
    }
    const producer = kafka.producer()
    await producer.connect()
    const messages = []
    for (let i = 0; i < 40; i++) messages.push({ partition: i % 4, value: 'v', timestamp: String(1700000000000 + i * 1000) })
    await producer.send({ topic, messages })
    await producer.disconnect()
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
    const offsets = await admin.fetchTopicOffsets(topic)
    offsets.sort((a, b) => a.partition - b.partition)
    seen.start_offsets = offsets.map((o) => Number(o.low))
    seen.end_offsets = offsets.map((o) => Number(o.high))
    const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, 1700000020000)
    seen.offsets_after_ts = byTime.sort((a, b) => a.partition - b.partition).map((o) => Number(o.offset))
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] })
    seen.partitions = metadata.topics[0].partitions.length
    const cluster = await admin.describeCluster()
    seen.brokers = cluster.brokers.length
    seen.controller_is_broker = cluster.controller === cluster.brokers[0].nodeId
    seen.cluster_id_set = typeof cluster.clusterId === 'string' && cluster.clusterId.length > 0
    seen.listed = (await admin.listTopics()).includes(topic)
    await admin.deleteTopics({ topics: [topic] })
    seen.listed_after_delete = (await admin.listTopics()).includes(topic)
    return seen
  })
}

const modes = { 'produce-consume': produceConsume, group, transactions, admin }
if (!modes[mode]) {
  console.error(`unknown mode ${mode}`)
  process.exit(2)
}
const timer = setTimeout(() => {
  console.error(`${mode}: timed out`)
  process.exit(1)
}, 150000)
modes[mode]().then((seen) => {
  clearTimeout(timer)
  console.log(JSON.stringify(seen))
  process.exit(0)
}, (err) => {
  console.error(`${mode}: ${err.stack || err}`)
  process.exit(1)
})
