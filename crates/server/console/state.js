// What the whole console knows about the session: the key's scope, as the
// server reported it, and whether the server has keys at all.

export const state = {
  scope: null, // "read" | "write" | "admin", or null before the key is known good
  keys: false,
};
