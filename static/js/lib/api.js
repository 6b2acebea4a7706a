// The REST API from the pages: same-origin fetch with the session cookie, JSON both ways, and
// Django's CSRF token on every write (the page carries it in a {% csrf_token %} input).

function csrfToken() {
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

// A readable message for a failed request: DRF's {"field": ["error"]} becomes "field: error".
export function errorText(status, data) {
  if (status === 403) return (data && data.detail) || "Permission denied: your account may not do this.";
  if (status === 401) return "You are signed out. Sign in again.";
  if (data && typeof data === "object") {
    return Object.entries(data)
      // "cluster" names the kind of the cluster's refusal (Conflict, Invalid) for API clients;
      // the detail beside it says it in words.
      .filter(([k]) => k !== "cluster" || !("detail" in data))
      .map(([k, v]) => {
        const label = k === "detail" || k === "non_field_errors" ? "" : k + ": ";
        const text = Array.isArray(v) ? v.join(" ") : typeof v === "object" ? JSON.stringify(v) : String(v);
        return label + text;
      })
      .join("\n");
  }
  return "Request failed (HTTP " + status + ")";
}

export class ApiError extends Error {
  constructor(status, data) {
    super(errorText(status, data));
    this.status = status;
    this.data = data;
  }
}

// api("/api/modelservings/") -> parsed JSON; api(path, {method: "POST", body}) sends JSON with
// the CSRF header. Throws ApiError (message ready to show) on any non-2xx answer.
export async function api(path, { method = "GET", body } = {}) {
  // The audit records actions from these pages with source "page" (the server honours the header
  // only with a session, so a script cannot pass its calls off as the page's).
  const headers = { Accept: "application/json", "X-RolloutUI-Source": "page" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    headers["X-CSRFToken"] = csrfToken();
  }
  const resp = await fetch(path, {
    method,
    credentials: "same-origin",
    headers,
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  let data = null;
  try {
    data = await resp.json();
  } catch {
    // an empty or non-JSON body: the status says enough
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

export const post = (path, body) => api(path, { method: "POST", body });
