// The H264Kit display layer's page: samples over a WebSocket, decoded with WebCodecs'
// VideoDecoder, each frame drawn on the canvas when the control timebase (mapped onto
// performance.now()) reaches its presentation time. Sound (AAC) is decoded with AudioDecoder
// and played through Web Audio on the same timebase (the seeds' AVSampleBufferAudioRenderer
// under a render synchronizer). Late frames (a later one is due too) are
// dropped and counted; every VideoFrame is closed once drawn or dropped. Live streams are drawn
// as they are decoded; a live stream with sound plays both on a clock of its own, started
// LIVE_SOUND_DELAY_S behind the first picture (the time the sound's blocks need to be decoded and
// queued on the audio context before they are heard), so that what is heard goes with what is seen. The page reports what it measured (status ten times a second, a report
// at the end) and sends back PNGs of the frames asked for. No framework, no build step.
'use strict';

const canvas = document.getElementById('screen');
const context = canvas.getContext('2d');
const overlay = document.getElementById('overlay');
const message = document.getElementById('message');
const playButton = document.getElementById('play');
const stepButton = document.getElementById('step');
const rateSelect = document.getElementById('rate');
const seekBar = document.getElementById('seek');
const timeLabel = document.getElementById('time');

const HEADER = 40;
const counts = { received: 0, decoded: 0, presented: 0, dropped: 0, flushed: 0, decodeErrors: 0 };

// Percentiles from a fixed histogram (0.25 ms bins up to 4 s): memory stays flat however long.
class Histogram {
  constructor() { this.bins = new Uint32Array(16001); this.count = 0; this.max = 0; }
  add(ms) {
    const value = Math.max(0, ms);
    this.bins[Math.min(16000, Math.floor(value * 4))]++;
    this.count++;
    if (value > this.max) this.max = value;
  }
  percentile(p) {
    if (this.count === 0) return 0;
    let rank = Math.ceil(this.count * p), seen = 0;
    for (let i = 0; i < this.bins.length; i++) {
      seen += this.bins[i];
      if (seen >= rank) return Math.min(this.max, (i + 1) / 4);
    }
    return this.max;
  }
  summary() { return { p50: this.percentile(0.5), p95: this.percentile(0.95), max: this.max }; }
}
const lateness = new Histogram();
const frameLoop = new Histogram();   // the intervals between animation frames: the browser's own punctuality
let lastTick = null;
const liveLatency = new Histogram();

// Sound: AAC samples (message kind 2) decoded by an AudioDecoder; each decoded block waits in
// `sounds` (in time order) and is started on the audio context when the clock comes within
// SOUND_AHEAD_S of it, at the context time that is heard when the clock reaches its
// presentation time (getOutputTimestamp maps the two clocks, output latency included).
// Blocks that follow one another are chained end to start (no click from rounding) while the
// chain stays within SOUND_SLACK_MS of the clock. Any change of the clock stops what is
// started; the blocks start again from the new time. At each frame drawn while sound plays,
// the difference between the sound heard and the frame shown is the A/V skew.
let audioContext = null, audioDecoder = null, audioConfiguration = null;
let sounds = [];            // { buffer, timestamp (µs), node, contextStart, contextEnd, mediaStart (µs), rate, skipped }
const SOUND_AHEAD_S = 0.25, SOUND_SLACK_MS = 10;
const soundCounts = { received: 0, decoded: 0, started: 0, skipped: 0, decodeErrors: 0, rechained: 0 };
const avSkew = new Histogram();   // |sound heard - frame shown| at each frame drawn (ms)
let skewSigned = 0, lastSoundError = '';
let lastStarted = null;     // the block started last, while the clock runs unchanged

let configuration = null;   // the last config message
let decoder = null;
let live = false;
// A live stream with sound: pictures and sound on the page's clock, which starts (rate 1) this
// far behind the first picture drawn after the sound's configuration came.
const LIVE_SOUND_DELAY_S = 0.3;
function liveWithSound() { return live && audioConfiguration !== null; }
let frames = [];            // decoded, waiting for their time: { frame, arrival }
const pending = new Map();  // presentation time (µs) -> { hidden, arrival } of samples in the decoder
let error = null;           // a fatal error: playback stopped (the stream cannot be decoded here)
let waitingForKey = false;
let lastDecodeError = '';
let given = 0;              // samples handed to the decoder
let flushedUndecoded = 0;   // of those, dropped in the decoder by a flush
let lostToErrors = 0;       // of those, lost to a decode error (the failing one and those behind it)
let lastOutputAt = null;    // performance.now() of the last frame out of the decoder
// The decoder's own speed: frames out while samples wait in it (a backlog), over that time.
// Without a backlog it kept up with what it was given, and its speed is not measured.
let busyFrames = 0, busyMs = 0;
// A file at a running clock: frames out of the decoder after their time had come while other
// samples waited in it (it fell behind), and samples that reached the page after their time.
let decodedLate = 0, receivedLate = 0;
// Frames dropped because no animation frame came within their time (the browser's frame loop).
let droppedBetweenAnimationFrames = 0;
let previousTickTime = null;   // the clock's time (µs) at the last tick that drew from a running clock
let endRequested = false, flushing = false, ended = false, reported = false;
let captures = new Set();
let lastDrawn = null;       // presentation time (µs) of the frame on screen
let firstFrameAt = null;    // performance.now() when the first frame was drawn (from the page's navigation)
// Where the time to the first frame went (ms from the page's navigation): each mark once.
const startup = {};
function mark(name) { if (!(name in startup)) startup[name] = Math.round(performance.now() * 10) / 10; }
mark('script');
let duration = 0;

// The clock: the control timebase's time and rate, anchored on performance.now().
const clock = { time: 0, rate: 0, wall: performance.now(), waitingForFirstFrame: true, waitingSince: null };
// Before the clock starts, a few frames are decoded ahead (a player's preroll): a decoder that
// is only just faster than real time then keeps up. The first frame is shown at once meanwhile.
const PREROLL_FRAMES = 4, PREROLL_MS = 300;
function prerolled() {
  if (frames.length >= PREROLL_FRAMES) return true;
  if (pending.size === 0) return true;   // everything sent so far is decoded
  if (clock.waitingSince === null) clock.waitingSince = performance.now();
  return performance.now() - clock.waitingSince >= PREROLL_MS;
}
function clockTime() { return clock.time + (performance.now() - clock.wall) / 1000 * clock.rate; }
// When a presentation time (µs) is due on the page's clock, in performance.now() terms (rate > 0).
function dueAt(timestamp) { return clock.wall + (timestamp / 1e6 - clock.time) / clock.rate * 1000; }
// Whether a presentation time has passed on a running file clock (not before it starts, not live).
function isPast(timestamp, at) { return !live && !clock.waitingForFirstFrame && clock.rate > 0 && at > dueAt(timestamp); }
function setClock(time, rate) { clock.time = time; clock.rate = rate; clock.wall = performance.now(); previousTickTime = null; stopSounds(); }

// The stream beside the page (a signed page's token goes with it): wss:// for a page over https://.
const socketURL = new URL('stream', location.href);
socketURL.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
const socket = new WebSocket(socketURL.href);
socket.binaryType = 'arraybuffer';
socket.onopen = () => mark('socketOpen');
socket.onmessage = (event) => {
  if (typeof event.data === 'string') {
    let control;
    try { control = JSON.parse(event.data); } catch (e) { return; }
    onControl(control);
  } else if (event.data.byteLength >= HEADER && new DataView(event.data).getUint8(0) === 2) {
    onAudioSample(event.data);
  } else {
    onSample(event.data);
  }
};
socket.onclose = () => { overlay.textContent += '\n(disconnected)'; };

function send(object) { if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(object)); }

function fail(text) {
  if (error) return;
  error = text;
  message.textContent = text;
  send({ type: 'error', message: text });
  sendReport('report');
}

function base64Bytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function onControl(control) {
  switch (control.type) {
    case 'config': configure(control); break;
    case 'audioConfig': configureSound(control); break;
    case 'timebase':
      if (live) break;   // a live stream plays as it comes (with sound, on the page's own clock)
      setClock(control.time, control.rate);
      if (control.rate > 0 && counts.presented === 0) clock.waitingForFirstFrame = true;
      playButton.textContent = control.rate > 0 ? '⏸' : '▶';
      break;
    case 'info':
      duration = control.duration || 0;
      seekBar.max = String(duration);
      break;
    case 'flush': flushAll(); break;
    case 'end':
      endRequested = true;
      // (The decoder gives back the sound it still holds.)
      if (audioDecoder && audioDecoder.state === 'configured') audioDecoder.flush().catch(() => {});
      break;
    case 'capture': for (const t of control.timestamps) captures.add(t); break;
  }
}

function decoderConfig(control) {
  return { codec: control.codec, description: base64Bytes(control.description), optimizeForLatency: !!control.live };
}

function configure(control) {
  mark('configuration');
  if (decoder && decoder.state === 'configured' && configuration && configuration.codec === control.codec
      && configuration.description === control.description && !!configuration.live === !!control.live) return;   // nothing new
  configuration = control;
  live = !!control.live;
  // The canvas takes a configuration's size only before any frame is drawn (for the layout);
  // after that each frame sets it when drawn (fitCanvas): frames of the old size may still be
  // queued when a new configuration comes, and must not be stretched to it.
  if (firstFrameAt === null) {
    canvas.width = control.width;
    canvas.height = control.height;
  }
  const config = decoderConfig(control);
  VideoDecoder.isConfigSupported(config).then((support) => {
    if (!support.supported) stop(`This browser cannot decode ${control.codec} (${control.width}x${control.height}).`);
  }, (e) => stop(`This browser cannot decode ${control.codec}: ${e.message}`));
  try {
    if (!decoder || decoder.state === 'closed') decoder = new VideoDecoder({ output: onFrame, error: onDecoderError });
    decoder.configure(config);   // a new configuration applies from the next sample (a sync sample)
  } catch (e) {
    stop(`This browser cannot decode ${control.codec}: ${e.message}`);
  }
}

// A fatal error: the decoder goes, nothing more is decoded, the report says why.
function stop(text) {
  if (decoder && decoder.state !== 'closed') decoder.close();
  for (const entry of frames) entry.frame.close();
  frames = [];
  pending.clear();
  fail(text);
}

// A damaged sample closes the decoder (WebCodecs): count it, start a new decoder from the same
// configuration and go on at the next sync sample, as ffmpeg conceals and resumes.
function onDecoderError(e) {
  counts.decodeErrors++;
  lastDecodeError = e.message;
  if (error) return;
  counts.dropped += pending.size;
  lostToErrors += pending.size;
  pending.clear();
  if (counts.decodeErrors > 1000) { stop(`Decoder error: ${e.message} (${counts.decodeErrors} errors)`); return; }
  decoder = null;
  waitingForKey = true;
  if (configuration) configure(configuration);
}

function onSample(buffer) {
  const view = new DataView(buffer);
  if (buffer.byteLength < HEADER || view.getUint8(0) !== 1) return;
  counts.received++;
  mark('firstSample');
  const flags = view.getUint8(1);
  const timestamp = Number(view.getBigInt64(8));
  const sampleDuration = Number(view.getBigInt64(24));
  const arrival = Number(view.getBigInt64(32));
  if (!decoder || decoder.state !== 'configured') return;
  if (waitingForKey) {
    if ((flags & 1) === 0) { counts.dropped++; return; }
    waitingForKey = false;
  }
  pending.set(timestamp, { hidden: (flags & 2) !== 0, arrival });
  if ((flags & 2) === 0 && isPast(timestamp, performance.now())) receivedLate++;
  given++;
  try {
    decoder.decode(new EncodedVideoChunk({
      type: (flags & 1) ? 'key' : 'delta', timestamp, duration: sampleDuration, data: new Uint8Array(buffer, HEADER),
    }));
  } catch (e) {
    pending.delete(timestamp);
    lostToErrors++;
    onDecoderError(e);
  }
}

function onFrame(frame) {
  counts.decoded++;
  mark('firstDecoded');
  const outAt = performance.now();
  const backlog = decoder !== null && decoder.decodeQueueSize > 0;
  if (lastOutputAt !== null && backlog) { busyFrames++; busyMs += outAt - lastOutputAt; }
  lastOutputAt = outAt;
  const info = pending.get(frame.timestamp) || { hidden: false, arrival: 0 };
  pending.delete(frame.timestamp);
  if (info.hidden) { frame.close(); return; }   // decoded on the way to a seek's target
  // Given back after the end was reported (a decoder's output can follow its flush's
  // promise): too late to be shown, counted as dropped so the report still adds up.
  if (ended) { frame.close(); counts.dropped++; return; }
  if (backlog && isPast(frame.timestamp, outAt)) decodedLate++;
  let index = frames.length;
  while (index > 0 && frames[index - 1].frame.timestamp > frame.timestamp) index--;
  frames.splice(index, 0, { frame, arrival: info.arrival });
  if (counts.presented === 0) tick(false);   // the first frame at once, not at the next animation frame
}

function flushAll() {
  for (const entry of frames) { entry.frame.close(); counts.flushed++; }
  frames = [];
  // Still in the decoder, which the reset below drops (those a seek hid were never to be shown).
  for (const info of pending.values()) if (!info.hidden) counts.flushed++;
  flushedUndecoded += pending.size;
  pending.clear();
  if (decoder && decoder.state !== 'closed') {
    decoder.reset();   // unconfigures: the configuration comes again before the next sample
    if (configuration) { try { decoder.configure(decoderConfig(configuration)); } catch (e) { fail(e.message); } }
  }
  stopSounds();
  sounds = [];
  if (audioDecoder && audioDecoder.state !== 'closed') {
    audioDecoder.reset();
    if (audioConfiguration) { try { audioDecoder.configure(audioDecoderConfig(audioConfiguration)); } catch (e) { soundFailed(e); } }
  }
  clock.waitingForFirstFrame = true;
  endRequested = false;
  ended = false;
  reported = false;
}

// The first frame drawn while the preroll goes on (not yet counted as presented: it is drawn
// again, on time, when the clock starts).
function showPoster(entry) {
  fitCanvas(entry.frame);
  context.drawImage(entry.frame, 0, 0, canvas.width, canvas.height);
  firstFrameAt = performance.now();
  mark('firstDrawn');
}

// Each frame is drawn at its own size (the picture's visible rectangle, as ffmpeg outputs
// it): the canvas changes size when the first frame of a new size is drawn.
function fitCanvas(frame) {
  const width = frame.visibleRect ? frame.visibleRect.width : frame.displayWidth;
  const height = frame.visibleRect ? frame.visibleRect.height : frame.displayHeight;
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width;
    canvas.height = height;
  }
}

function draw(entry) {
  const frame = entry.frame;
  fitCanvas(frame);
  context.drawImage(frame, 0, 0, canvas.width, canvas.height);
  counts.presented++;
  if (firstFrameAt === null) { firstFrameAt = performance.now(); mark('firstDrawn'); }
  lastDrawn = frame.timestamp;
  if ((!live || liveWithSound()) && clock.rate > 0 && !clock.waitingForFirstFrame) measureSkew(frame.timestamp);
  if (live && entry.arrival > 0) liveLatency.add(performance.timeOrigin + performance.now() - entry.arrival / 1000);
  if (captures.has(frame.timestamp)) capture(frame.timestamp);
  frame.close();
}

let capturesInFlight = 0;   // PNGs being encoded: the end is reported after them
function capture(timestamp) {
  captures.delete(timestamp);
  capturesInFlight++;
  canvas.toBlob((blob) => {
    if (!blob) { capturesInFlight--; return; }
    blob.arrayBuffer().then((png) => {
      capturesInFlight--;
      const bytes = new Uint8Array(9 + png.byteLength);
      bytes[0] = 2;
      new DataView(bytes.buffer).setBigInt64(1, BigInt(timestamp));
      bytes.set(new Uint8Array(png), 9);
      socket.send(bytes);
    });
  }, 'image/png');
}

// MARK: Sound

function audioDecoderConfig(control) {
  const config = { codec: control.codec, sampleRate: control.sampleRate, numberOfChannels: control.numberOfChannels };
  if (control.description) config.description = base64Bytes(control.description);
  return config;
}

function soundFailed(e) {
  soundCounts.decodeErrors++;
  lastSoundError = e && e.message ? e.message : String(e);
}

function configureSound(control) {
  if (audioConfiguration && audioDecoder && audioDecoder.state === 'configured' && audioConfiguration.codec === control.codec
      && audioConfiguration.description === control.description && audioConfiguration.sampleRate === control.sampleRate) return;
  // A live stream's sound: from here pictures wait for their time on the page's clock,
  // started behind the next picture.
  if (audioConfiguration === null && live) clock.waitingForFirstFrame = true;
  audioConfiguration = control;
  try {
    // The context at the stream's rate: Web Audio resamples nothing then.
    if (!audioContext) audioContext = new AudioContext({ sampleRate: control.sampleRate, latencyHint: 'interactive' });
    if (!audioDecoder || audioDecoder.state === 'closed') {
      audioDecoder = new AudioDecoder({ output: onAudioData, error: (e) => { soundFailed(e); audioDecoder = null; if (soundCounts.decodeErrors < 1000) configureSound(audioConfiguration); } });
    }
    audioDecoder.configure(audioDecoderConfig(control));
  } catch (e) {
    soundFailed(e);
  }
}

function onAudioSample(buffer) {
  const view = new DataView(buffer);
  soundCounts.received++;
  if ((view.getUint8(1) & 2) !== 0) return;   // before a seek's target: not heard
  if (!audioDecoder || audioDecoder.state !== 'configured' || error) return;
  try {
    audioDecoder.decode(new EncodedAudioChunk({
      type: 'key', timestamp: Number(view.getBigInt64(8)), duration: Number(view.getBigInt64(24)), data: new Uint8Array(buffer, HEADER),
    }));
  } catch (e) {
    soundFailed(e);
  }
}

function onAudioData(data) {
  soundCounts.decoded++;
  try {
    const block = audioContext.createBuffer(data.numberOfChannels, data.numberOfFrames, data.sampleRate);
    for (let channel = 0; channel < data.numberOfChannels; channel++) {
      data.copyTo(block.getChannelData(channel), { planeIndex: channel, format: 'f32-planar' });
    }
    let index = sounds.length;
    while (index > 0 && sounds[index - 1].timestamp > data.timestamp) index--;
    sounds.splice(index, 0, { buffer: block, timestamp: data.timestamp, node: null });
  } catch (e) {
    soundFailed(e);
  } finally {
    data.close();
  }
}

// The context time heard at a performance.now() time.
function contextTimeAt(stamp, perf) { return stamp.contextTime + (perf - stamp.performanceTime) / 1000; }

// Stops every started block (the clock changed): they start again from the new time.
function stopSounds() {
  for (const sound of sounds) {
    if (!sound.node) continue;
    try { sound.node.stop(); } catch (e) {}
    sound.node.disconnect();
    sound.node = null;
  }
  lastStarted = null;
}

function scheduleSounds() {
  if (!audioContext || audioContext.state !== 'running' || (live && !liveWithSound())) return;
  if (clock.rate <= 0 || clock.waitingForFirstFrame) return;
  const stamp = audioContext.getOutputTimestamp();
  if (!stamp.performanceTime) return;
  const heard = contextTimeAt(stamp, performance.now());
  // Blocks heard to their end go.
  while (sounds.length > 0 && sounds[0].node && sounds[0].contextEnd < heard - 0.1) { sounds[0].node.disconnect(); sounds.shift(); }
  const horizon = clockTime() + SOUND_AHEAD_S * clock.rate;
  const earliest = audioContext.currentTime + 0.002;
  for (const sound of sounds) {
    if (sound.node || sound.skipped) continue;
    if (sound.timestamp / 1e6 > horizon) break;
    let when = contextTimeAt(stamp, dueAt(sound.timestamp));
    if (lastStarted && Math.abs(lastStarted.mediaEnd - sound.timestamp) < 1000 && lastStarted.contextEnd >= earliest) {
      // Follows the block before: it starts at that one's end, unless the clocks drifted apart.
      if (Math.abs(lastStarted.contextEnd - when) * 1000 <= SOUND_SLACK_MS) when = lastStarted.contextEnd; else soundCounts.rechained++;
    }
    let offset = 0;
    if (when < earliest) { offset = (earliest - when) * clock.rate; when = earliest; }
    if (offset >= sound.buffer.duration) {
      // Its time has passed (before the clock's start, or the page fell behind): not heard.
      sound.skipped = true;
      soundCounts.skipped++;
      continue;
    }
    const node = audioContext.createBufferSource();
    node.buffer = sound.buffer;
    node.playbackRate.value = clock.rate;
    node.connect(audioContext.destination);
    node.start(when, offset);
    sound.node = node;
    sound.contextStart = when;
    sound.contextEnd = when + (sound.buffer.duration - offset) / clock.rate;
    sound.mediaStart = sound.timestamp + offset * 1e6;
    sound.rate = clock.rate;
    lastStarted = { contextEnd: sound.contextEnd, mediaEnd: sound.timestamp + sound.buffer.duration * 1e6 };
    soundCounts.started++;
  }
  while (sounds.length > 0 && sounds[0].skipped) sounds.shift();
}

// The sound heard now against the frame just drawn: the A/V skew a viewer meets, in real
// time (media time over the rate: at rate 2 a frame drawn one animation frame late is 33 ms
// of media but 17 ms of what anyone sees and hears).
function measureSkew(timestamp) {
  if (!audioContext || audioContext.state !== 'running') return;
  const stamp = audioContext.getOutputTimestamp();
  if (!stamp.performanceTime) return;
  const heard = contextTimeAt(stamp, performance.now());
  for (const sound of sounds) {
    if (!sound.node || heard < sound.contextStart || heard >= sound.contextEnd) continue;
    const skew = (sound.mediaStart + (heard - sound.contextStart) * sound.rate * 1e6 - timestamp) / 1000 / sound.rate;
    avSkew.add(Math.abs(skew));
    skewSigned += skew;
    return;
  }
}

// Each animation frame: draw the frame whose time has come, drop those it supersedes.
function tick(animating) {
  if (frames.length > 0) {
    if (liveWithSound()) {
      if (clock.waitingForFirstFrame) {
        // The clock starts behind the first picture: sound decoded meanwhile is heard with it.
        if (firstFrameAt === null) showPoster(frames[0]);
        setClock(frames[0].frame.timestamp / 1e6 - LIVE_SOUND_DELAY_S, 1);
        clock.waitingForFirstFrame = false;
      }
      const now = clockTime() * 1e6 + 500;
      let due = -1;
      for (let i = 0; i < frames.length && frames[i].frame.timestamp <= now; i++) due = i;
      for (let i = 0; i < due; i++) {
        const superseded = frames[i];
        if (captures.has(superseded.frame.timestamp)) { draw(superseded); counts.presented--; } else { superseded.frame.close(); }
        counts.dropped++;
      }
      if (due >= 0) {
        const entry = frames[due];
        lateness.add(performance.now() - dueAt(entry.frame.timestamp));
        frames = frames.slice(due + 1);
        draw(entry);
      }
    } else if (live) {
      while (frames.length > 1) {
        const superseded = frames.shift();
        if (captures.has(superseded.frame.timestamp)) { draw(superseded); counts.presented--; counts.dropped++; } else { superseded.frame.close(); counts.dropped++; }
      }
      draw(frames.shift());
    } else {
      if (clock.waitingForFirstFrame && clock.rate > 0) {
        if (!prerolled()) {
          if (firstFrameAt === null) showPoster(frames[0]);
        } else {
          // Playing starts when the first frames are ready: the first one's time is now.
          setClock(frames[0].frame.timestamp / 1e6, clock.rate);
          clock.waitingForFirstFrame = false;
          clock.waitingSince = null;
        }
      }
      const prerolling = clock.waitingForFirstFrame && clock.rate > 0;
      const now = clockTime() * 1e6 + 500;   // (half a millisecond of rounding)
      const previous = previousTickTime;
      previousTickTime = !prerolling && clock.rate > 0 ? now : null;
      let due = -1;
      for (let i = 0; !prerolling && i < frames.length && frames[i].frame.timestamp <= now; i++) due = i;
      if (due < 0 && clock.rate === 0 && lastDrawn === null) due = 0;   // paused before the first frame: show it
      if (due >= 0) {
        for (let i = 0; i < due; i++) {
          const late = frames[i];
          if (clock.rate > 0 && (previous === null || previous < late.frame.timestamp)) droppedBetweenAnimationFrames++;
          if (captures.has(late.frame.timestamp)) { draw(late); counts.presented--; } else { late.frame.close(); }
          counts.dropped++;
        }
        const entry = frames[due];
        if (clock.rate > 0) {
          const dueWall = dueAt(entry.frame.timestamp);
          lateness.add(performance.now() - dueWall);
        }
        frames = frames.slice(due + 1);
        draw(entry);
      }
    }
  }
  scheduleSounds();
  if (endRequested && !flushing && !ended && decoder && decoder.state === 'configured' && pending.size > 0 && decoder.decodeQueueSize === 0) {
    // The last samples are in: the decoder gives back the frames it holds for reordering.
    flushing = true;
    decoder.flush().catch(() => {}).finally(() => { flushing = false; pending.clear(); });
  }
  if (endRequested && !ended && !flushing && pending.size === 0 && frames.length === 0 && capturesInFlight === 0) {
    ended = true;
    if (counts.presented === 0 && counts.decodeErrors > 0 && !error) {
      error = `No frame could be decoded: ${counts.decodeErrors} decode error(s), the last: ${lastDecodeError}`;
    }
    sendReport('report');
  }
  if (animating === false) return;
  const tickAt = performance.now();
  if (lastTick !== null && document.visibilityState === 'visible') frameLoop.add(tickAt - lastTick);
  lastTick = tickAt;
  showOverlay();
  requestAnimationFrame(tick);
}

let lastCount = 0, lastCountTime = performance.now(), fps = 0;
function showOverlay() {
  const now = performance.now();
  if (now - lastCountTime >= 1000) {
    fps = (counts.presented - lastCount) * 1000 / (now - lastCountTime);
    lastCount = counts.presented;
    lastCountTime = now;
  }
  const c = configuration;
  const lines = [
    c ? `${c.width}x${c.height} ${c.codec}${live ? ' (live)' : ''}` : 'waiting for the stream',
    `${fps.toFixed(1)} fps, presented ${counts.presented}, dropped ${counts.dropped}, flushed ${counts.flushed}, late p95 ${lateness.percentile(0.95).toFixed(1)} ms`,
    `decode queue ${decoder ? decoder.decodeQueueSize : 0}, waiting ${frames.length}, errors ${counts.decodeErrors}`,
  ];
  if (live) lines.push(`added latency p50 ${liveLatency.percentile(0.5).toFixed(1)} ms, p95 ${liveLatency.percentile(0.95).toFixed(1)} ms`);
  overlay.textContent = lines.join('\n');
  const time = live ? (lastDrawn || 0) / 1e6 : clockTime();
  timeLabel.textContent = time.toFixed(3);
  if (document.activeElement !== seekBar && duration > 0) seekBar.value = String(Math.min(duration, time));
}

function report(type) {
  const c = configuration || {};
  const result = {
    type, framesReceived: counts.received, framesDecoded: counts.decoded, framesPresented: counts.presented,
    framesDropped: counts.dropped, framesFlushed: counts.flushed, decodeErrors: counts.decodeErrors, latenessMs: lateness.summary(),
    codec: c.codec || '', width: c.width || 0, height: c.height || 0, userAgent: navigator.userAgent,
    decodeQueue: decoder ? decoder.decodeQueueSize : 0, framesWaiting: frames.length,
    time: live ? (lastDrawn || 0) / 1e6 : clockTime(), rate: clock.rate, ended,
  };
  if (lastDrawn !== null) result.presentedTime = lastDrawn / 1e6;
  if (firstFrameAt !== null) result.firstFrameMs = firstFrameAt;
  if (frameLoop.count > 0) result.frameLoopMs = frameLoop.summary();
  result.startupMs = startup;
  if (busyFrames >= 5 && busyMs > 0) {
    result.decodeFramesPerSecond = busyFrames * 1000 / busyMs;
  }
  if (!live) {
    result.framesDecodedLate = decodedLate;
    result.samplesReceivedLate = receivedLate;
    result.framesDroppedBetweenAnimationFrames = droppedBetweenAnimationFrames;
  }
  if (ended && !error && counts.decoded + flushedUndecoded + lostToErrors < given) {
    result.warning = `The browser's decoder returned ${counts.decoded} of the ${given} frames it was given (no error).`;
  }
  if (audioConfiguration) {
    result.sound = {
      codec: audioConfiguration.codec, sampleRate: audioConfiguration.sampleRate, channels: audioConfiguration.numberOfChannels,
      received: soundCounts.received, decoded: soundCounts.decoded, started: soundCounts.started, skipped: soundCounts.skipped,
      rechained: soundCounts.rechained, decodeErrors: soundCounts.decodeErrors, contextState: audioContext ? audioContext.state : 'none',
      skewMs: avSkew.summary(), meanSkewMs: avSkew.count > 0 ? skewSigned / avSkew.count : 0, skewSamples: avSkew.count,
    };
    if (lastSoundError) result.sound.error = lastSoundError;
  }
  if (error) result.error = error;
  if (live) result.liveLatencyMs = liveLatency.summary();
  if (performance.memory) result.heapBytes = performance.memory.usedJSHeapSize;
  return result;
}

function sendReport(type) {
  if (type === 'report') { if (reported) return; reported = true; }
  send(report(type));
}

setInterval(() => sendReport('status'), 100);

// Controls: play, pause and rate change the layer's timebase; seek and step go to the source.
playButton.onclick = () => send({ type: 'control', action: clock.rate > 0 ? 'pause' : 'play', value: Number(rateSelect.value) });
rateSelect.onchange = () => send({ type: 'control', action: 'rate', value: Number(rateSelect.value) });
seekBar.onchange = () => { if (!live) send({ type: 'control', action: 'seek', value: Number(seekBar.value) }); };
stepButton.onclick = () => {
  if (live || clock.rate > 0 || frames.length === 0) return;
  const entry = frames.shift();
  setClock(entry.frame.timestamp / 1e6, 0);
  draw(entry);
  send({ type: 'control', action: 'step', value: lastDrawn / 1e6 });
};

// A browser lets sound start only after a gesture on the page (the tests' Chromium is told not to wait).
document.addEventListener('click', () => { if (audioContext && audioContext.state === 'suspended') audioContext.resume(); });

requestAnimationFrame(tick);
