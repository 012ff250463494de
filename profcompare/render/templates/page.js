/* profcompare HTML page: sort tables by clicking a header; filter the variable table; draw the
   interactive charts (BokehJS, inlined in the page) and switch what they show. */
(function () {
  "use strict";

  var data = {};
  try {
    data = JSON.parse(document.getElementById("profcompare-data").textContent);
  } catch (err) {
    data = {};
  }

  function sortKey(cell, numeric) {
    if (!cell) { return null; }
    var raw = cell.getAttribute("data-sort");
    if (raw === null || raw === "") { return numeric ? null : cell.textContent.toLowerCase(); }
    if (numeric) {
      var value = parseFloat(raw);
      return isNaN(value) ? null : value;
    }
    return raw.toLowerCase();
  }

  function compareKeys(a, b) {
    if (a === b) { return 0; }
    if (a === null) { return 1; }
    if (b === null) { return -1; }
    return a < b ? -1 : 1;
  }

  function sortTable(table, th) {
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var index = headers.indexOf(th);
    var numeric = th.getAttribute("data-type") === "number";
    var current = th.getAttribute("aria-sort");
    // numbers start largest first (the interesting end), text starts A to Z
    var direction = current ? (current === "ascending" ? "descending" : "ascending")
                            : (numeric ? "descending" : "ascending");
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", direction);
    var sign = direction === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).filter(function (r) { return !r.classList.contains("empty"); });
    var keyed = rows.map(function (row, position) {
      return { row: row, key: sortKey(row.cells[index], numeric), position: position };
    });
    keyed.sort(function (a, b) {
      // missing values stay last in both directions
      if (a.key === null || b.key === null) {
        return compareKeys(a.key, b.key) || a.position - b.position;
      }
      return sign * compareKeys(a.key, b.key) || a.position - b.position;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
  }

  // ---- long tables: the first data-fold rows (in sort order, among those the filter keeps),
  // and an expander that shows them all; folded rows are classed, never [hidden] (the filter's)
  function fold(table) {
    var limit = parseInt(table.getAttribute("data-fold"), 10);
    var button = document.getElementById(table.id + "-expander");
    if (!limit || !button) { return; }
    var open = button.getAttribute("aria-expanded") === "true";
    var kept = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      if (row.hidden || row.classList.contains("empty")) {
        row.classList.remove("folded");
        return;
      }
      kept += 1;
      row.classList.toggle("folded", !open && kept > limit);
    });
    button.hidden = kept <= limit;
    button.textContent = open ? "Show the first " + limit + " rows"
                              : "Show all " + kept.toLocaleString("en-US") + " rows";
  }

  Array.prototype.forEach.call(document.querySelectorAll("table[data-fold]"), function (table) {
    var button = document.getElementById(table.id + "-expander");
    if (!button) { return; }
    button.setAttribute("aria-expanded", "false");
    button.addEventListener("click", function () {
      button.setAttribute("aria-expanded", button.getAttribute("aria-expanded") === "true" ? "false" : "true");
      fold(table);
    });
    fold(table);
  });

  // the whole header cell is the click target; its button (for the keyboard) bubbles up to it
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () { sortTable(table, th); fold(table); });
    });
  });

  // ---- interactive charts: each chart's data is a Bokeh JSON item (escaped by tojson) ----
  function chartModel(name) {
    if (typeof Bokeh === "undefined" || !Bokeh.documents) { return null; }
    for (var i = 0; i < Bokeh.documents.length; i += 1) {
      var model = Bokeh.documents[i].get_model_by_name(name);
      if (model) { return model; }
    }
    return null;
  }
  window.profcompareChartModel = chartModel;

  // fit the y axis to what is in view (zooming into a phase shows it at full height); the
  // curve sources (<chart>:curve:<i>) and level lines (<chart>:level:<i>) count
  function fitY(chartId) {
    var xr = chartModel(chartId + ":x");
    var yr = chartModel(chartId + ":y");
    if (!xr || !yr) { return; }
    var lo = Math.min(xr.start, xr.end);
    var hi = Math.max(xr.start, xr.end);
    var top = 0;
    ["curve", "level"].forEach(function (kind) {
      for (var index = 0; ; index += 1) {
        var source = chartModel(chartId + ":" + kind + ":" + index);
        if (!source) { break; }
        var xs = source.data.x;
        var ys = source.data.y;
        for (var i = 0; i < xs.length; i += 1) {
          var next = i + 1 < xs.length ? xs[i + 1] : xs[i];
          if (next >= lo && xs[i] <= hi && ys[i] > top) { top = ys[i]; }
        }
      }
    });
    if (top > 0 && (yr.start !== 0 || Math.abs(yr.end - top * 1.08) > 1e-9 * top)) {
      yr.start = 0;
      yr.end = top * 1.08;
    }
  }

  function showColumn(chartId, column) {
    // every curve's source holds y_<column> / lo_<column>; the glyphs draw y / lo
    for (var index = 0; ; index += 1) {
      var source = chartModel(chartId + ":curve:" + index);
      if (!source) { break; }
      var data = Object.assign({}, source.data);
      if (!data["y_" + column]) { continue; }
      data.y = data["y_" + column];
      data.lo = data["lo_" + column];
      source.data = data;
    }
    fitY(chartId);
  }

  function showCaption(chartId, column) {
    // the caption says what the chart now shows (the captions come from the page's data, as text)
    var figure = document.getElementById(chartId);
    var caption = figure ? figure.querySelector(".chart-caption[data-captions]") : null;
    if (!caption) { return; }
    var captions;
    try {
      captions = JSON.parse(caption.getAttribute("data-captions"));
    } catch (err) {
      return;
    }
    if (Object.prototype.hasOwnProperty.call(captions, column)) { caption.textContent = captions[column]; }
  }

  // quietly (Bokeh.set_log_level writes its own line to the console)
  if (typeof Bokeh !== "undefined" && Bokeh.logger) { Bokeh.logger.set_level("warn"); }

  // a chart is drawn once, when its section is open: BokehJS sizes a chart to its container,
  // which has no width inside a closed section
  function drawChart(node) {
    if (typeof Bokeh === "undefined" || node.getAttribute("data-drawn") === "true") { return null; }
    node.setAttribute("data-drawn", "true");
    var item;
    try {
      item = JSON.parse(node.textContent);
    } catch (err) {
      return null;
    }
    var chartId = node.getAttribute("data-chart");
    var figure = document.getElementById(chartId);
    var drawn = Bokeh.embed.embed_item(item, node.getAttribute("data-target")).then(function () {
      var xr = chartModel(chartId + ":x");
      if (xr) { xr.change.connect(function () { fitY(chartId); }); }
      if (figure) { figure.setAttribute("data-ready", "true"); }
    });
    drawing.push(drawn);
    return drawn;
  }

  // every chart drawn or being drawn; whenDrawn() resolves when they all are (each one pushes
  // down what lies below it as it is drawn)
  var drawing = [];
  function whenDrawn() {
    var count = drawing.length;
    return Promise.all(drawing).then(function () { return drawing.length > count ? whenDrawn() : null; });
  }

  function drawCharts(root) {
    Array.prototype.forEach.call(root.querySelectorAll("script.chart-data"), function (node) {
      var fold = node.closest("section.fold");
      if (!fold || fold.classList.contains("open")) { drawChart(node); }
    });
  }

  // ---- detail sections fold: closed until their button, a link to them (the navigation, the
  // URL's hash) or printing opens them; without JavaScript they show open (html.js is unset)
  function setOpen(section, open) {
    section.classList.toggle("open", open);
    var button = section.querySelector(".fold-toggle");
    if (button) { button.setAttribute("aria-expanded", open ? "true" : "false"); }
    if (open) { drawCharts(section); }
  }

  // open the section holding the element a link names (#operations, #variables-table): the
  // element, or null when its section was open already
  function openFor(hash) {
    var id = hash && hash.charAt(0) === "#" ? hash.slice(1) : "";
    if (!id) { return null; }
    try { id = decodeURIComponent(id); } catch (err) { return null; }
    var target = document.getElementById(id);
    var section = target ? target.closest("section.fold") : null;
    if (!section || section.classList.contains("open")) { return null; }
    setOpen(section, true);
    return target;
  }

  Array.prototype.forEach.call(document.querySelectorAll("section.fold"), function (section) {
    setOpen(section, false);
    var button = section.querySelector(".fold-toggle");
    if (button) {
      button.addEventListener("click", function () { setOpen(section, !section.classList.contains("open")); });
    }
  });
  // ---- the liveness chart's step panel: what is live at the clicked step, in each report ----
  function formatBytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var v = Math.abs(n), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return (n < 0 ? "-" : "") + (i === 0 ? String(v) + " B" : v.toFixed(1) + " " + units[i]);
  }
  function signed(n) { return n > 0 ? "+" + formatBytes(n) : (n === 0 ? "0 B" : formatBytes(n)); }
  function cell(row, text, numeric) {
    var td = document.createElement(row.parentNode && row.parentNode.tagName === "THEAD" ? "th" : "td");
    td.textContent = text;
    if (numeric) { td.className = "num"; }
    row.appendChild(td);
  }
  function alignedTable(data, sides, key, label, part) {
    // rows keyed by name (or group) across the reports: bytes in each and the difference
    var rows = {}, order = [];
    sides.forEach(function (side, s) {
      if (!side) { return; }
      side[part].forEach(function (entry) {
        var name = data[key][entry[0]];
        if (!(name in rows)) { rows[name] = { values: sides.map(function () { return 0; }), group: "" }; order.push(name); }
        rows[name].values[s] = entry[entry.length - 1];
        if (part === 4 && entry[1] >= 0) { rows[name].group = data.groups[entry[1]]; }
      });
    });
    var table = document.createElement("table");
    var head = table.createTHead().insertRow();
    cell(head, label);
    if (part === 4) { cell(head, "Parameter · role"); }
    data.labels.forEach(function (l) { cell(head, l, true); });
    if (sides.length === 2) { cell(head, "Delta", true); }
    var body = table.createTBody();
    order.forEach(function (name) {
      var row = body.insertRow(), r = rows[name];
      cell(row, name);
      if (part === 4) { cell(row, r.group); }
      r.values.forEach(function (v) { cell(row, formatBytes(v), true); });
      if (sides.length === 2) { cell(row, signed(r.values[1] - r.values[0]), true); }
    });
    return table;
  }
  function showStep(chartId, bucket) {
    var panel = document.getElementById(chartId + "-panel");
    var data = panel && panel.panelData;
    if (!data || bucket < 0 || bucket >= data.buckets.length) { return; }
    var sides = data.buckets[bucket];
    var view = panel.querySelector(".step-view");
    view.textContent = "";
    var title = document.createElement("p");
    title.className = "step-title";
    title.textContent = sides.map(function (side, s) {
      return data.labels[s] + ": " + (side ? "step " + side[0].toLocaleString() + " (" + data.names[side[1]] + "), " +
        formatBytes(side[2]) + " not-always-live" : "no step here");
    }).join("; ");
    view.appendChild(title);
    view.appendChild(alignedTable(data, sides, "groups", "Parameter · role", 3));
    view.appendChild(alignedTable(data, sides, "names", "Largest variables", 4));
    var note = document.createElement("p");
    note.className = "note";
    note.textContent = "The largest (parameter, role) groups and variables live at each report's step with the most " +
      "not-always-live bytes in this part of the chart. Every variable: profcompare compare --at STEP.";
    view.appendChild(note);
  }
  Array.prototype.forEach.call(document.querySelectorAll("script.chart-panel"), function (node) {
    var chartId = node.getAttribute("data-panel");
    var panel = document.getElementById(chartId + "-panel");
    var data;
    try { data = JSON.parse(node.textContent); } catch (err) { return; }
    if (!panel) { return; }
    panel.panelData = data;
    var peaks = panel.querySelector(".step-peaks");
    if (data.peaks.length) { peaks.appendChild(document.createTextNode("Peaks: ")); }
    data.peaks.forEach(function (peak, i) {
      var link = document.createElement("a");
      link.href = "#" + chartId;
      link.textContent = data.labels[peak[0]] + " #" + peak[1] + " (step " + peak[3].toLocaleString() + ", " +
        formatBytes(peak[4]) + ")";
      link.addEventListener("click", function (ev) { ev.preventDefault(); showStep(chartId, peak[2]); });
      if (i) { peaks.appendChild(document.createTextNode(" · ")); }
      peaks.appendChild(link);
    });
  });
  document.addEventListener("profcompare-tap", function (ev) {
    var chartId = ev.detail && ev.detail.chart;
    var panel = chartId && document.getElementById(chartId + "-panel");
    var data = panel && panel.panelData;
    if (!data || !data.edges.length) { return; }
    var x = ev.detail.x, lo = 0, hi = data.edges.length - 2;
    while (lo < hi) {  // the last bucket whose left edge is at or before x
      var mid = (lo + hi + 1) >> 1;
      if (data.edges[mid] <= x) { lo = mid; } else { hi = mid - 1; }
    }
    showStep(chartId, lo);
  });

  // a link is followed after its section opens, so the page scrolls to where the section now is
  Array.prototype.forEach.call(document.querySelectorAll("a[href^='#']"), function (link) {
    link.addEventListener("click", function () { openFor(link.getAttribute("href")); });
  });
  // the URL's hash names an element in a closed section: open it and scroll to the element, again
  // once the charts above it are drawn (they move it down)
  function openHash() {
    var target = openFor(location.hash);
    if (!target) { return; }
    target.scrollIntoView();
    whenDrawn().then(function () { target.scrollIntoView(); });
  }
  window.addEventListener("hashchange", openHash);
  // printing shows every section open with its charts, and closes again those it opened
  var openedToPrint = [];
  window.addEventListener("beforeprint", function () {
    openedToPrint = Array.prototype.filter.call(document.querySelectorAll("section.fold:not(.open)"), function (s) {
      setOpen(s, true);
      return true;
    });
  });
  window.addEventListener("afterprint", function () {
    openedToPrint.forEach(function (s) { setOpen(s, false); });
    openedToPrint = [];
  });
  drawCharts(document);
  openHash();
  Array.prototype.forEach.call(document.querySelectorAll(".chart-controls input[type=radio]"), function (input) {
    input.addEventListener("change", function () {
      if (input.checked) {
        showColumn(input.getAttribute("data-chart"), input.value);
        showCaption(input.getAttribute("data-chart"), input.value);
      }
    });
  });

  // ---- tree tables (the program tree): rows carry data-id, data-parent, data-depth and data-open;
  // a row with children gets a toggle (a button with aria-expanded) that hides or shows them.
  // A row is shown when every row above it is open and, while a filter is set, when it matches
  // or encloses a match (the filter opens the rows enclosing a match; those not matching are
  // marked as context). Folded runs' members are children of their run's row.
  function setupTree(table) {
    var rows = Array.prototype.slice.call(table.tBodies[0].rows).filter(function (r) {
      return r.hasAttribute("data-id");
    });
    var byId = {};
    var children = {};
    var open = {};
    var toggles = {};
    var matched = null;  // while a filter is set: id -> "match" | "context"
    rows.forEach(function (row) {
      var id = row.getAttribute("data-id");
      byId[id] = row;
      open[id] = row.getAttribute("data-open") === "true";
      var parent = row.getAttribute("data-parent");
      if (parent) { (children[parent] = children[parent] || []).push(row); }
    });
    function parentOf(row) { return byId[row.getAttribute("data-parent") || ""] || null; }
    function shown(row) {
      for (var up = parentOf(row); up; up = parentOf(up)) {
        if (!open[up.getAttribute("data-id")]) { return false; }
      }
      return !matched || Object.prototype.hasOwnProperty.call(matched, row.getAttribute("data-id"));
    }
    function refresh() {
      rows.forEach(function (row) {
        var id = row.getAttribute("data-id");
        row.hidden = !shown(row);
        row.classList.toggle("context", matched !== null && matched[id] === "context");
        if (toggles[id]) { toggles[id].setAttribute("aria-expanded", open[id] ? "true" : "false"); }
      });
      fold(table);
    }
    rows.forEach(function (row) {
      var id = row.getAttribute("data-id");
      var cell = row.cells[0];
      var text = cell && cell.firstChild && cell.firstChild.nodeType === 3 ? cell.firstChild : null;
      var mark;
      if (children[id]) {
        mark = document.createElement("button");
        mark.type = "button";
        mark.className = "tree-toggle";
        mark.setAttribute("aria-label", "programs under " + (row.getAttribute("data-name") || ""));
        mark.addEventListener("click", function () {
          open[id] = !open[id];
          refresh();
        });
        toggles[id] = mark;
      } else {
        mark = document.createElement("span");
        mark.className = "tree-leaf";
      }
      if (!cell) { return; }
      // after the indentation ("  └ "), before the name
      var indent = text ? text.data.match(/^[\u00a0]*(\u2514 )?/)[0].length : 0;
      cell.insertBefore(mark, indent && text ? text.splitText(indent) : cell.firstChild);
    });
    table.profcompareTree = {
      filter: function (keep) {
        // keep: a row -> whether it matches; null clears the filter
        if (!keep) {
          matched = null;
        } else {
          matched = {};
          rows.forEach(function (row) {
            if (!keep(row)) { return; }
            matched[row.getAttribute("data-id")] = "match";
            for (var up = parentOf(row); up; up = parentOf(up)) {
              var upId = up.getAttribute("data-id");
              open[upId] = true;
              if (!matched[upId]) { matched[upId] = "context"; }
            }
          });
        }
        refresh();
        return matched ? Object.keys(matched).filter(function (k) { return matched[k] === "match"; }).length : rows.length;
      },
      setAll: function (value) {
        rows.forEach(function (row) { open[row.getAttribute("data-id")] = value; });
        var button = document.getElementById(table.id + "-expander");
        if (button) { button.setAttribute("aria-expanded", value ? "true" : "false"); }
        refresh();
      },
      size: rows.length
    };
    refresh();
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.tree"), setupTree);
  Array.prototype.forEach.call(document.querySelectorAll(".tree-controls"), function (box) {
    var target = document.getElementById(box.getAttribute("data-table"));
    if (!target || !target.profcompareTree) { return; }
    box.hidden = false;
    Array.prototype.forEach.call(box.querySelectorAll("button.tree-all"), function (button) {
      button.addEventListener("click", function () {
        target.profcompareTree.setAll(button.getAttribute("data-open") === "true");
      });
    });
  });

  // ---- filters above other tables (the memory ledger): text in data-name, selects on data-<attr> ----
  Array.prototype.forEach.call(document.querySelectorAll("div.table-filter"), function (box) {
    var target = document.getElementById(box.getAttribute("data-table"));
    if (!target) { return; }
    var text = box.querySelector("input.filter-text");
    var selects = Array.prototype.slice.call(box.querySelectorAll("select.filter-select"));
    var counter = box.querySelector(".count");
    function apply() {
      var needle = text ? text.value.toLowerCase() : "";
      var rows = Array.prototype.slice.call(target.tBodies[0].rows).filter(function (r) {
        return !r.classList.contains("empty");
      });
      function matches(row) {
        var keep = !needle || (row.getAttribute("data-name") || "").toLowerCase().indexOf(needle) !== -1;
        selects.forEach(function (sel) {
          if (sel.value && row.getAttribute("data-" + sel.getAttribute("data-attr")) !== sel.value) { keep = false; }
        });
        return keep;
      }
      var filtered = needle || selects.some(function (sel) { return sel.value; });
      var shown = 0;
      if (target.profcompareTree) {
        // a tree shows the matches with the rows enclosing them (it folds itself)
        shown = target.profcompareTree.filter(filtered ? matches : null);
        counter.textContent = filtered ? shown.toLocaleString("en-US") + " of " + rows.length.toLocaleString("en-US") +
          " rows match" : "";
        return;
      }
      rows.forEach(function (row) {
        var keep = matches(row);
        row.hidden = !keep;
        if (keep) { shown += 1; }
      });
      counter.textContent = filtered ? shown.toLocaleString("en-US") + " of " + rows.length.toLocaleString("en-US") +
        " rows match" : "";
      fold(target);
    }
    if (text) { text.addEventListener("input", apply); }
    selects.forEach(function (sel) { sel.addEventListener("change", apply); });
  });

  // ---- column chooser: a table[data-column-chooser] gets a list of its columns with checkboxes
  // (a <details> before it); unticking one hides its header and cells; th[data-hidden] start
  // hidden. Not remembered between visits.
  function showTableColumn(table, index, shown) {
    Array.prototype.forEach.call(table.rows, function (row) {
      var cell = row.cells[index];
      // rows of a single cell across the table (the "empty" row) keep it
      if (cell && row.cells.length === table.tHead.rows[0].cells.length) { cell.classList.toggle("col-hidden", !shown); }
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table[data-column-chooser]"), function (table) {
    if (!table.tHead) { return; }
    var chooser = document.createElement("details");
    chooser.className = "column-chooser";
    var summary = document.createElement("summary");
    summary.textContent = "Columns";
    chooser.appendChild(summary);
    var list = document.createElement("fieldset");
    var legend = document.createElement("legend");
    legend.textContent = "Columns shown";
    list.appendChild(legend);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.checked = !th.hasAttribute("data-hidden");
      box.setAttribute("data-column", th.getAttribute("data-key") || String(index));
      box.addEventListener("change", function () { showTableColumn(table, index, box.checked); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + th.textContent.trim()));
      list.appendChild(label);
      if (!box.checked) { showTableColumn(table, index, false); }
    });
    chooser.appendChild(list);
    var wrap = table.closest(".table-wrap") || table;
    wrap.parentNode.insertBefore(chooser, wrap);
  });

  // ---- row details: a table[data-details] names a JSON list (one entry per body row, the row's
  // data-row its index); a "details" button in the row's first cell shows the row's entry in the
  // panel under the table, as text (the names in it come from a report)
  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (className) { node.className = className; }
    return node;
  }
  function detailView(detail) {
    var view = document.createDocumentFragment();
    var two = detail.labels.length === 2;
    view.appendChild(element("h3", detail.name, "row-detail-title"));
    var table = element("table", null, "data detail-figures");
    var head = table.createTHead().insertRow();
    head.appendChild(element("th", ""));
    detail.labels.forEach(function (label) { head.appendChild(element("th", label, "num")); });
    if (two) { head.appendChild(element("th", "Delta", "num")); }
    var body = table.createTBody();
    detail.figures.forEach(function (figure) {
      var row = body.insertRow();
      row.appendChild(element("th", figure[0]));
      figure[1].forEach(function (text) { row.appendChild(element("td", text, "num")); });
      if (two) { row.appendChild(element("td", figure[2], "num")); }
    });
    detail.facts.forEach(function (fact) {
      var row = body.insertRow();
      row.appendChild(element("th", fact[0]));
      fact[1].forEach(function (text) { row.appendChild(element("td", text)); });
      if (two) { row.appendChild(element("td", "")); }
    });
    view.appendChild(table);
    detail.steps.forEach(function (steps, s) {
      var title = "Program steps" + (two ? " (" + detail.labels[s] + ")" : "");
      view.appendChild(element("h4", title));
      if (!detail.present[s]) {
        view.appendChild(element("p", "The op is not in this report.", "note"));
        return;
      }
      if (!steps.rows.length) {
        view.appendChild(element("p", "No program of the report names this op.", "note"));
        return;
      }
      var list = element("ol", null, "detail-steps");
      steps.rows.forEach(function (step) {
        var item = element("li");
        item.appendChild(element("span", step[0], "step-kind"));
        item.appendChild(document.createTextNode(" " + step[1]));
        list.appendChild(item);
      });
      view.appendChild(list);
      if (steps.more > 0) { view.appendChild(element("p", "and " + steps.more.toLocaleString("en-US") + " more", "note")); }
    });
    return view;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table[data-details]"), function (table) {
    var node = document.getElementById(table.getAttribute("data-details"));
    var panel = document.getElementById(table.id + "-detail");
    var details;
    try { details = JSON.parse(node.textContent); } catch (err) { return; }
    if (!panel) { return; }
    var current = null;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var index = parseInt(row.getAttribute("data-row"), 10);
      var detail = details[index];
      if (isNaN(index) || !detail || !row.cells[0]) { return; }
      var button = element("button", "details", "row-detail-toggle");
      button.type = "button";
      button.setAttribute("aria-expanded", "false");
      button.setAttribute("aria-controls", panel.id);
      button.setAttribute("aria-label", "details of " + detail.name);
      button.addEventListener("click", function () {
        var open = current !== button;
        if (current) { current.setAttribute("aria-expanded", "false"); current.closest("tr").classList.remove("detail-open"); }
        panel.textContent = "";
        panel.hidden = !open;
        current = open ? button : null;
        if (!open) { return; }
        button.setAttribute("aria-expanded", "true");
        row.classList.add("detail-open");
        panel.appendChild(detailView(detail));
        var close = element("button", "Close", "row-detail-close");
        close.type = "button";
        close.addEventListener("click", function () { button.click(); button.focus(); });
        panel.appendChild(close);
      });
      // the row still sorts by the name alone, not by the button's word
      if (!row.cells[0].hasAttribute("data-sort")) { row.cells[0].setAttribute("data-sort", row.cells[0].textContent); }
      row.cells[0].appendChild(button);
    });
  });

  var table = document.getElementById("variables-table");
  var input = document.getElementById("variable-filter");
  var regexBox = document.getElementById("variable-regex");
  var select = document.getElementById("variable-status");
  var count = document.getElementById("variable-count");
  var error = document.getElementById("variable-error");
  if (!table || !input || !select) { return; }
  var filterKey = "filter";

  function matcher() {
    var text = input.value;
    error.textContent = "";
    input.classList.remove("invalid");
    if (!text) { return function () { return true; }; }
    if (regexBox && regexBox.checked) {
      try {
        var pattern = new RegExp(text, "i");
        return function (name) { return pattern.test(name); };
      } catch (err) {
        error.textContent = "invalid regular expression";
        input.classList.add("invalid");
        return function () { return true; };
      }
    }
    var needle = text.toLowerCase();
    return function (name) { return name.toLowerCase().indexOf(needle) !== -1; };
  }

  function applyFilter() {
    var matches = matcher();
    var wanted = select.value;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows).filter(function (r) {
      return !r.classList.contains("empty");
    });
    var shown = 0;
    rows.forEach(function (row) {
      var name = row.getAttribute("data-name") || "";
      var keep = matches(name) && (!wanted || row.getAttribute("data-" + filterKey) === wanted);
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    var filtered = input.value || wanted;
    count.textContent = filtered ? shown.toLocaleString("en-US") + " of " + rows.length.toLocaleString("en-US") +
      " rows match" : "";
    if (filtered && data.variables && data.variables.cut > 0) {
      count.textContent += " (" + data.variables.cut.toLocaleString("en-US") + " more variables are not in this page)";
    }
    fold(table);
  }

  input.addEventListener("input", applyFilter);
  select.addEventListener("change", applyFilter);
  if (regexBox) { regexBox.addEventListener("change", applyFilter); }
  if (data.variables && typeof data.variables.total === "number") {
    // the note under the filter says how many variables exist beyond the rows shown
    table.setAttribute("data-total", String(data.variables.total));
  }
  applyFilter();
})();
