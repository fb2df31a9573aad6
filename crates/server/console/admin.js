// The actions that change or destroy boards and members, each behind the
// confirmation dialog; destructive ones ask for the board's name to be typed.

import { send, boardPath, memberPath, allows } from "./api.js";
import { h, showError, showNote } from "./ui.js";
import { state } from "./state.js";

/**
 * Opens the shared <dialog>. Resolves with the field values on confirm, or
 * null on cancel or Escape. The browser's modal dialog keeps focus inside and
 * closes on Escape; focus goes back to the button that opened it.
 */
export function confirmDialog({ title, text, confirmLabel, danger, typeToConfirm, fields = [] }) {
  const dialog = document.getElementById("confirm");
  const opener = document.activeElement;
  const inputs = {};
  const confirmBtn = h("button", { type: "submit", class: danger ? "danger" : "primary", value: "ok" }, confirmLabel);
  const body = [h("h2", { id: "confirm-title" }, title), text ? h("p", {}, text) : null];
  for (const f of fields) {
    const id = "dlg-" + f.name;
    const el = f.multiline
      ? h("textarea", { id, name: f.name, rows: 8, spellcheck: "false", required: f.required })
      : h("input", { id, name: f.name, type: "text", autocomplete: "off", spellcheck: "false", required: f.required });
    el.value = f.value || "";
    inputs[f.name] = el;
    body.push(h("label", { for: id }, f.label), el);
  }
  if (typeToConfirm) {
    const el = h("input", { id: "dlg-confirm-name", type: "text", autocomplete: "off", spellcheck: "false" });
    inputs.__confirm = el;
    confirmBtn.disabled = true;
    el.addEventListener("input", () => { confirmBtn.disabled = el.value !== typeToConfirm; });
    body.push(h("label", { for: "dlg-confirm-name" }, `Type “${typeToConfirm}” to confirm`), el);
  }
  const form = h("form", { method: "dialog" }, body,
    h("div", { class: "dialog-actions" },
      // Not a submit button: Enter in a field submits with the first one, which must be the confirmation.
      h("button", { type: "button", onclick: () => dialog.close("cancel") }, "Cancel"), confirmBtn));
  dialog.replaceChildren(form);
  dialog.setAttribute("aria-labelledby", "confirm-title");
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (opener && opener.isConnected) opener.focus();
      if (dialog.returnValue !== "ok") return resolve(null);
      const values = {};
      for (const [k, el] of Object.entries(inputs)) values[k] = el.value;
      resolve(values);
    }, { once: true });
    dialog.showModal();
    const first = fields.length ? inputs[fields[0].name] : inputs.__confirm || confirmBtn;
    first.focus();
  });
}

function parseConfig(text) {
  const t = text.trim() || "{}";
  const v = JSON.parse(t);
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("The config must be a JSON object.");
  return v;
}

/** An action button, disabled with the reason when the key's scope does not allow it. */
export function actionButton(label, need, onclick, cls) {
  const ok = allows(state.scope, need);
  return h("button", {
    type: "button", class: cls, onclick, disabled: !ok, "data-action": label.toLowerCase().replace(/\s+/g, "-"),
    title: ok ? null : `Needs a key with the ${need} scope`,
  }, label);
}

async function run(fn, done) {
  try {
    const r = await fn();
    if (done) done(r);
  } catch (e) {
    showError(e);
  }
}

export async function createBoard(onDone) {
  const v = await confirmDialog({
    title: "Create a board", confirmLabel: "Create",
    fields: [
      { name: "board", label: "Board name", required: true },
      { name: "config", label: "Config (JSON)", multiline: true, value: "{}" },
    ],
  });
  if (!v) return;
  await run(() => send("PUT", boardPath(v.board), parseConfig(v.config)), () => {
    showNote(`Board “${v.board}” created.`);
    onDone(v.board);
  });
}

/**
 * What an edited config changes, as a JSON merge patch: the fields whose
 * value differs, and null for a field deleted (back to its default). Only
 * the fields the user touched are sent, so a field left as shown is never
 * reset by accident.
 */
export function patchOf(before, after) {
  const patch = {};
  for (const k of Object.keys(before)) if (!(k in after)) patch[k] = null;
  for (const [k, v] of Object.entries(after)) {
    if (JSON.stringify(v) !== JSON.stringify(before[k])) patch[k] = v;
  }
  return patch;
}

export async function reconfigureBoard(board, config, onDone) {
  const before = config || {};
  const v = await confirmDialog({
    title: `Reconfigure “${board}”`, confirmLabel: "Save config",
    text: "Only the fields you change are saved; a field you delete goes back to its default. A change of order, ranking, tiebreak or sort keys re-ranks the board, which is asked before it is done.",
    fields: [{ name: "config", label: "Config (JSON)", multiline: true, value: JSON.stringify(before, null, 2) }],
  });
  if (!v) return;
  let patch;
  try {
    patch = patchOf(before, parseConfig(v.config));
  } catch (e) {
    return showError(e);
  }
  if (Object.keys(patch).length === 0) return showNote("Nothing changed.");
  const done = () => {
    showNote(`Board “${board}” reconfigured.`);
    onDone();
  };
  try {
    await send("PATCH", boardPath(board), patch);
    return done();
  } catch (e) {
    if (!e || e.code !== "confirm_rerank_required") return showError(e);
    const ok = await confirmDialog({
      title: `Re-rank “${board}”?`, confirmLabel: "Re-rank board", danger: true, text: e.message,
    });
    if (!ok) return;
    await run(() => send("PATCH", boardPath(board), { ...patch, confirm_rerank: true }), done);
  }
}

export async function resetBoard(board, onDone) {
  const v = await confirmDialog({
    title: `Reset “${board}”`, confirmLabel: "Reset board", danger: true, typeToConfirm: board,
    text: "Every entry moves into a new read-only archive and the board starts empty.",
  });
  if (!v) return;
  await run(() => send("POST", boardPath(board, "reset")), (r) => {
    showNote(`Board “${board}” reset; its entries are in the archive “${r && r.archive}”.`);
    onDone(r);
  });
}

export async function deleteBoard(board, onDone) {
  const v = await confirmDialog({
    title: `Delete “${board}”`, confirmLabel: "Delete board", danger: true, typeToConfirm: board,
    text: "The board and all its entries are deleted. This cannot be undone.",
  });
  if (!v) return;
  await run(() => send("DELETE", boardPath(board)), () => {
    showNote(`Board “${board}” deleted.`);
    onDone();
  });
}

export async function removeMember(board, member, onDone) {
  const v = await confirmDialog({
    title: "Remove a member", confirmLabel: "Remove member", danger: true,
    text: `Remove “${member}” and its data from “${board}”?`,
  });
  if (!v) return;
  await run(() => send("DELETE", memberPath(board, "members", member)), () => {
    showNote(`Member “${member}” removed from “${board}”.`);
    onDone();
  });
}
