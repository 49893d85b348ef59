// The Restate SDK 1.17 calls Promise.withResolvers, which Node 20 lacks (every call would fail and
// the ingress would retry forever). Imported before the SDK.
if (!Promise.withResolvers) {
  Promise.withResolvers = function withResolvers() {
    let resolve, reject;
    const promise = new this((res, rej) => ((resolve = res), (reject = rej)));
    return { promise, resolve, reject };
  };
}
