"""scripts/slide_reference_check.py: the edits it makes to the reference code, the config it
writes, the engine command it runs, and its C++ probe, built against a stand-in reference."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

# A stand-in for the reference SLIDE sources: the classes and members probe.h reads, and a
# main.cpp that holds the lines the script edits. Hidden layer: 3 ReLU nodes over 4 inputs;
# output layer: 400 labels, 2 tables; a vector's code in table t is the index of its (t + 1)-th
# largest coordinate, and a bucket holds (id + 1) of the first BUCKETSIZE labels with its code.
FAKE = {
    "Config.h": ("#define ADAM 1\n#define HashFunction 1\n#define BUCKETSIZE 128\n#define binsize 8\n#define Ratio 3\n"
                 "#define Mode 4\n#define THRESH 2\n#define FIFO 1\n#define LOADWEIGHT 0\n"),
    "Node.h": "#pragma once\n#include <cstddef>\nstruct Node { size_t _dim; float* _weights; float _bias; };\n",
    "LSH.h": """#pragma once
#include <vector>
struct LSH {
    int L, n_codes; std::vector<std::vector<int>> store;   // store[t * n_codes + code]
    int* hashesToIndex(int* h) { int* r = new int[L]; for (int t = 0; t < L; t++) r[t] = h[t]; return r; }
    int** retrieveRaw(int* idx) {
        int** r = new int*[L];
        for (int t = 0; t < L; t++) { auto& b = store[t * n_codes + idx[t]]; r[t] = b.empty() ? nullptr : b.data(); }
        return r;
    }
};
""",
    "Hashes.h": """#pragma once
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
// table t's code: the index of the vector's (t + 1)-th largest coordinate (ties: lower index)
inline int rank_index(const float* v, int n, int t) {
    std::vector<int> o(n); for (int k = 0; k < n; k++) o[k] = k;
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return v[a] > v[b]; });
    return o[t % n];
}
struct ArgmaxHash {
    int L;
    int* hash(float* data, int n) { int* h = new int[L]; for (int t = 0; t < L; t++) h[t] = rank_index(data, n, t); return h; }
    int* getHash(int* ids, float* data, int n) {   // DWTA's query: every hidden node's id, in order
        for (int k = 0; k < n; k++) if (ids[k] != k) { fprintf(stderr, "bad ids\\n"); exit(3); }
        return hash(data, n);
    }
    int* getHashSparse(int* ids, float* data, int n) { fprintf(stderr, "SimHash called\\n"); exit(4); }
};
typedef ArgmaxHash DensifiedWtaHash;
typedef ArgmaxHash SparseRandomProjection;
""",
    "Layer.h": """#pragma once
#include <cstddef>
#include "Node.h"
#include "LSH.h"
#include "Hashes.h"
class Layer {
    int _L;
public:
    size_t _noOfNodes; Node* _Nodes; LSH* _hashTables; DensifiedWtaHash* _dwtaHasher; SparseRandomProjection* _srp;
    Layer(size_t n, int L) : _L(L), _noOfNodes(n) {}
    Node* getNodebyID(size_t i) { return &_Nodes[i]; }
\tint getNodeCount();
};
inline int Layer::getNodeCount() { return (int)_noOfNodes; }
""",
    "Network.h": """#pragma once
#include "Layer.h"
struct Network { Layer* layers[2]; Layer* getLayer(int i) { return layers[i]; } };
""",
    "main.cpp": """#include <cstdio>
#include <string>
#include <vector>
#include "Config.h"
#include "Network.h"
std::string testData;
void EvalDataSVM(int, Network*, int) { printf("evaluated\\n"); }
int main(int argc, char** argv) {
    testData = argv[1];
    int d = 3, in = 4, labels = 400, L = 2;
    static float w1[3 * 4] = {1, 0, 0, 0,  0, 1, 0, 0,  0, 0, 1, -1};
    static float b1[3] = {0.1f, -0.2f, 0.0f};
    static std::vector<float> w2(labels * d);
    static Node hidden_nodes[3], output_nodes[400];
    for (int k = 0; k < d; k++) hidden_nodes[k] = Node{(size_t)in, w1 + k * in, b1[k]};
    for (int j = 0; j < labels; j++) {
        for (int k = 0; k < d; k++) w2[j * d + k] = (float)(((j * 7 + k * 5) % 11) - 5) / 5.0f;
        output_nodes[j] = Node{(size_t)d, w2.data() + j * d, (float)(j % 4) * 0.05f};
    }
    Layer* h = new Layer(d, 1); h->_Nodes = hidden_nodes;
    Layer* o = new Layer(labels, L); o->_Nodes = output_nodes;
    o->_dwtaHasher = new ArgmaxHash{L}; o->_srp = new ArgmaxHash{L};
    o->_hashTables = new LSH{L, d, std::vector<std::vector<int>>(L * d)};
    for (int t = 0; t < L; t++)
        for (int j = 0; j < labels; j++) {
            auto& b = o->_hashTables->store[t * d + rank_index(w2.data() + j * d, d, t)];
            if ((int)b.size() < BUCKETSIZE) b.push_back(j + 1);
        }
    for (auto& b : o->_hashTables->store) while (!b.empty() && (int)b.size() < BUCKETSIZE) { b.push_back(0); break; }
    Network* _mynet = new Network{{h, o}};
    int globalTime = 0, timeDiffInMiliseconds = 1, numBatches = 10, epoch = 0, numBatchesTest = 1;
    for (int i = 0; i < numBatches; i++) {
        if (i % 1000 == 0) {
            EvalDataSVM(20, _mynet, epoch*numBatches+i);
        }
        globalTime+= timeDiffInMiliseconds;
    }
    for (int e = 0; e < 1; e++) {
        if (e == 0) {
            EvalDataSVM(numBatchesTest, _mynet, (e+1)*numBatches);
        } else {
            EvalDataSVM(50, _mynet, (e+1)*numBatches);
        }
        _mynet->saveWeights(savedWeights);
    }
    printf("not exited\\n");
    return 0;
}
""",
}
FAKE_W1 = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1]], np.float32)
FAKE_B1 = np.array([0.1, -0.2, 0.0], np.float32)


def rank_index(v: np.ndarray, t: int) -> int:
    """The index of ``v``'s (t + 1)-th largest coordinate, ties to the lower index."""
    return int(np.argsort(-v, kind="stable")[t % v.size])


def fake_output_layer(labels: int = 400, d: int = 3, L: int = 2, capacity: int = 128):
    w2 = np.array([[((j * 7 + k * 5) % 11 - 5) / 5 for k in range(d)] for j in range(labels)], np.float32)
    b2 = np.array([(j % 4) * 0.05 for j in range(labels)], np.float32)
    buckets = {}
    for t in range(L):
        for j in range(labels):
            b = buckets.setdefault((t, rank_index(w2[j], t)), [])
            if len(b) < capacity:
                b.append(j)
    return w2, b2, buckets


def sequential_dot(w: np.ndarray, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``w @ x + bias`` in float32, term by term and then the bias, as Node::getActivation sums."""
    out = np.zeros(w.shape[0], np.float32)
    for k in range(w.shape[1]):
        out = (out + w[:, k] * np.float32(x[k])).astype(np.float32)
    return (out + bias.astype(np.float32)).astype(np.float32)


@pytest.fixture
def script(load_script):
    return load_script("slide_reference_check")


def fake_reference(tmp_path, with_subfolder=True):
    src = tmp_path / "ref" / ("SLIDE" if with_subfolder else "")
    src.mkdir(parents=True, exist_ok=True)
    for name, text in FAKE.items():
        (src / name).write_text(text)
    return tmp_path / "ref"


def test_patch_sources_edits_each_line_once_and_names_the_file_it_cannot_edit(tmp_path, script):
    build = fake_reference(tmp_path, with_subfolder=False)
    assert script.source_dir(build) == build
    script.patch_sources(build, "simhash")
    main = (build / "main.cpp").read_text()
    assert '#include "probe.h"' in main and "slide_probe(_mynet, testData, epoch * numBatches + i + 1);" in main
    assert "EvalDataSVM(20" not in main
    assert "int probe_tables() { return _L; }" in (build / "Layer.h").read_text()
    assert "#define HashFunction 4" in (build / "Config.h").read_text()
    with pytest.raises(script.ReferenceError, match="main.cpp"):     # already edited: the anchor is gone
        script.patch_sources(build, "dwta")
    with pytest.raises(script.ReferenceError, match="no SLIDE sources"):
        script.source_dir(tmp_path / "nowhere")


def test_config_follows_config_amz_with_the_given_sizes(tmp_path, script):
    text = script.config_text(train=tmp_path / "a.txt", test=tmp_path / "b.txt", n_train=1000, n_test=50,
                              n_features=77, n_labels=99, batch=128, lr=1e-2, K=6, L=50, batches=20,
                              log=tmp_path / "log.txt")
    fields = dict(line.replace(" ", "").split("=", 1) for line in text.splitlines() if "=" in line)
    assert fields["Rehash"] == str(50 * 128) and fields["Rebuild"] == str(1000 * 128)
    assert fields["K"] == "2,6" and fields["L"] == "20,50" and fields["Sparsity"] == "1,0.005,1,1"
    assert fields["sizesOfLayers"] == "128,99" and fields["InputDim"] == "77" and fields["Lr"] == "0.01"
    assert fields["Epoch"] == str(math.ceil(20 / (1000 // 128)))          # 7 batches an epoch: 3 epochs
    assert int(fields["Stepsize"]) > 10 ** 6
    with pytest.raises(script.ReferenceError, match="no batch"):
        script.config_text(train=tmp_path, test=tmp_path, n_train=5, n_test=5, n_features=1, n_labels=1,
                           batch=128, lr=1e-2, K=6, L=50, batches=1, log=tmp_path / "log.txt")


def test_engine_command_is_accepted_by_recall_probe(tmp_path, script, capsys):
    from impls.slide.data import xc_data
    from impls.slide.data.dataset import XCData
    from impls.slide.data.xc_format import write_xc
    from impls.slide.experiments import recall_probe

    arrays = xc_data.generate(seed=3, n_train=300, n_test=40, n_features=200, n_labels=150,
                              labels_per_point=2.0, nnz_per_point=12)
    train = write_xc(tmp_path / "train.txt", XCData.from_arrays(arrays, "train_").to_arrays())
    test = write_xc(tmp_path / "test.txt", XCData.from_arrays(arrays, "test_").to_arrays())
    a = SimpleNamespace(points=20, lr=1e-2, batch=16, lsh="dwta", K=3, L=4, threads=1, seed=0, padding="sample")
    cmd = script.engine_command(a, train, test, [1, 2])
    assert cmd[1:3] == ["-m", "impls.slide.experiments.recall_probe"]
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert {k: flags[k] for k in ("--adam", "--schedule", "--rehash-every", "--upkeep", "--min-active", "--index",
                                  "--dwta-zeros", "--padding", "--batches", "--at")} == {
        "--adam": "dense", "--schedule": "fixed", "--rehash-every": "50", "--upkeep": "none",
        "--min-active": "1000", "--index": "reference", "--dwta-zeros": "present", "--padding": "sample",
        "--batches": "2", "--at": "1,2"}
    # what the command leaves to the engine's defaults must be the reference's values
    from impls.slide.core.config import SlideConfig
    c = SlideConfig()
    assert (c.rebuild_every, c.rebuild_at_first_rehash, c.bucket_capacity, c.bucket_policy, c.binsize, c.hidden,
            c.mode) == (1000, True, 128, "fifo", 8, 128, "union")
    assert recall_probe.main(cmd[3:]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x["iteration"] for x in lines] == [1, 2] and all(0 <= x["p_at_1"] <= 1 for x in lines)
    rows = script.side_by_side({2: {"iteration": 2, "p_at_1": 0.5, "over_random": 3.0, "retrieved": 10.0,
                                    "hidden_cosine": 0.9}}, {x["iteration"]: x for x in lines})
    assert [r["iteration"] for r in rows] == [1, 2] and rows[0]["reference"] is None
    assert rows[1]["engine"]["over_random"] == lines[1]["full"]["over_random"]
    assert "| 1 | – / " in script.table(rows) and "| 2 | 0.500 / " in script.table(rows)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_probe_measures_what_the_engine_measures_on_a_stand_in_reference(tmp_path, script):
    from impls.slide.core.evaluate import mean_cosine
    from impls.slide.core.retrieval import wrong_top

    binary = script.build_reference(fake_reference(tmp_path), tmp_path / "out", "dwta")
    n_labels = 400
    points = [([2, 5], [0, 1, 3], [0.5, 0.2, 0.4]), ([1], [0, 2], [0.3, 0.9]), ([0, 7, 13], [1, 3], [0.8, 0.1]),
              ([9], [0, 3], [-0.5, 0.5])]                          # the last: every hidden unit is 0
    test = tmp_path / "test.txt"
    test.write_text(f"{len(points)} 4 {n_labels}\n" + "".join(
        ",".join(map(str, lab)) + " " + " ".join(f"{i}:{v}" for i, v in zip(idx, val)) + "\n"
        for lab, idx, val in points))

    def run(n_points):
        out = tmp_path / f"probe{n_points}.jsonl"
        done = subprocess.run([str(binary), str(test)], capture_output=True, text=True,
                              env={"PROBE_AT": "2,4", "PROBE_OUT": str(out), "PROBE_POINTS": str(n_points),
                                   "OMP_NUM_THREADS": "1"})
        assert done.returncode == 0, done.stderr
        assert "not exited" not in done.stdout and "evaluated" not in done.stdout
        return [json.loads(x) for x in out.read_text().splitlines()]

    got = run(len(points))
    assert [x["iteration"] for x in got] == [2, 4]
    w2, b2, buckets = fake_output_layer(n_labels)
    assert max(len(b) for b in buckets.values()) == 128                 # a full bucket: no terminator
    hits = p1 = 0
    recalls, sizes, hidden = [], [], []
    for labels, idx, val in points:
        x = np.zeros(4, np.float32)
        x[idx] = val
        h = np.maximum(sequential_dot(FAKE_W1, x, FAKE_B1), 0)
        hidden.append(h)
        logits = sequential_dot(w2, h, b2)
        ranked = np.array(sorted(range(n_labels), key=lambda j: (-logits[j], j)))
        p1 += ranked[0] in labels
        wrong = wrong_top(ranked, np.array(labels), 10)
        union = set()
        for t in range(2):
            union |= set(buckets.get((t, rank_index(h, t)), []))
        found = sum(j in union for j in wrong)
        hits += found
        recalls.append(found / len(wrong))
        sizes.append(len(union))
    for x in got:
        assert x["p_at_1"] == pytest.approx(p1 / len(points), abs=1e-6)
        assert x["hits"] == hits and x["trials"] == 10 * len(points)
        assert x["recall"] == pytest.approx(np.mean(recalls), abs=1e-6)
        assert x["retrieved"] == pytest.approx(np.mean(sizes), abs=1e-6)
        assert x["over_random"] == pytest.approx(np.mean(recalls) / (np.mean(sizes) / n_labels), rel=1e-6)
        assert x["hidden_cosine"] == pytest.approx(mean_cosine(np.array(hidden)), abs=1e-5)
    assert run(1)[0]["hidden_cosine"] is None                          # one point: no pair, JSON null


def test_a_missing_checkout_fails_before_any_export(tmp_path, script, capsys):
    out = tmp_path / "out"
    assert script.main([str(tmp_path / "nowhere"), str(out), "--profile", "smoke"]) == 1
    assert "no SLIDE sources" in capsys.readouterr().err and not list(out.iterdir())
    for bad in (["--train", str(tmp_path / "a.txt")], ["--at", "0,5"], ["--at", "x"], ["--lr", "0"]):
        with pytest.raises(SystemExit):
            script.main([str(tmp_path), str(out), *bad])
