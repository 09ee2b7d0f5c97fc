// The suite's retrieval probe, inside the reference SLIDE code (scripts/slide_reference_check.py
// includes it in main.cpp and calls slide_probe after each training batch).
//
// After the batch counts listed in PROBE_AT (comma-separated), it writes one JSON line to
// PROBE_OUT for the first PROBE_POINTS (default 300) points of the test file:
//   p_at_1         the fraction whose highest dense logit (w.h + b over every label) is a true label;
//   recall         mean over points of the fraction of its 10 highest-scoring wrong labels that
//                  the union of the L buckets its hidden vector hashes to holds;
//   retrieved      mean size of that union (neurons); random_recall = retrieved / labels;
//   hidden_cosine  mean cosine between two different points' hidden vectors (an all-zero one has
//                  cosine 0 with every other).
// A value that is not a number (no wrong labels; fewer than two points) is null.
// These are the definitions of impls.slide.core.retrieval.wrong_top_recall and
// impls.slide.core.evaluate.mean_cosine. It reads the network and its tables and changes
// nothing. After the last listed batch the program exits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "Network.h"

struct SlideProbePoint {
    std::vector<int> idx, lab;
    std::vector<float> val;
};

static std::vector<SlideProbePoint> slide_probe_points(const std::string& path, int n) {
    std::vector<SlideProbePoint> pts;
    std::ifstream f(path);
    std::string line, tok;
    std::getline(f, line);  // header
    while ((int)pts.size() < n && std::getline(f, line)) {
        SlideProbePoint p;
        std::istringstream ss(line);
        ss >> tok;
        std::stringstream labels(tok);
        std::string l;
        while (std::getline(labels, l, ',')) p.lab.push_back(std::stoi(l));
        while (ss >> tok) {
            size_t c = tok.find(':');
            p.idx.push_back(std::stoi(tok.substr(0, c)));
            p.val.push_back(std::stof(tok.substr(c + 1)));
        }
        pts.push_back(p);
    }
    return pts;
}

// A JSON number, or null where x is not finite (JSON has no NaN).
static std::string slide_probe_number(double x) {
    if (!std::isfinite(x)) return "null";
    char buf[64];
    snprintf(buf, sizeof buf, "%.8g", x);
    return buf;
}

static std::vector<int> slide_probe_batches() {
    std::vector<int> at;
    const char* s = getenv("PROBE_AT");
    if (!s) return at;
    std::stringstream ss(s);
    std::string t;
    while (std::getline(ss, t, ',')) at.push_back(std::stoi(t));
    return at;
}

static void slide_probe_write(Network* net, const std::string& test_path, int batches, FILE* out) {
    static std::vector<SlideProbePoint> pts =
        slide_probe_points(test_path, getenv("PROBE_POINTS") ? atoi(getenv("PROBE_POINTS")) : 300);
    Layer* hidden = net->getLayer(0);
    Layer* output = net->getLayer(1);
    int d = hidden->getNodeCount();
    size_t n_labels = output->_noOfNodes;
    std::vector<double> unit_sum(d, 0.0);
    std::vector<float> logits(n_labels);
    double recall_sum = 0, retrieved_sum = 0, p1 = 0, hits = 0, trials = 0;
    int with_wrong = 0, nonzero = 0;
    for (auto& p : pts) {
        std::vector<float> h(d);
        std::vector<int> ids(d);
        for (int k = 0; k < d; k++) {  // Node::getActivation: the terms, then the bias, then ReLU
            Node* node = hidden->getNodebyID(k);
            float a = 0;
            for (size_t j = 0; j < p.idx.size(); j++) a += node->_weights[p.idx[j]] * p.val[j];
            a += node->_bias;
            h[k] = a < 0 ? 0 : a;
            ids[k] = k;
        }
        double norm = 0;
        for (float x : h) norm += double(x) * x;
        norm = std::sqrt(norm);
        if (norm > 0) {
            for (int k = 0; k < d; k++) unit_sum[k] += h[k] / norm;
            nonzero++;
        }
#pragma omp parallel for
        for (size_t i = 0; i < n_labels; i++) {
            Node* node = output->getNodebyID(i);
            float a = 0;
            for (int k = 0; k < d; k++) a += node->_weights[k] * h[k];
            logits[i] = a + node->_bias;
        }
        std::set<int> truth(p.lab.begin(), p.lab.end());
        size_t m = std::min(n_labels, 10 + truth.size());
        std::vector<int> order(n_labels);
        for (size_t i = 0; i < n_labels; i++) order[i] = (int)i;
        std::partial_sort(order.begin(), order.begin() + m, order.end(),
                          [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
        if (truth.count(order[0])) p1 += 1;
        std::vector<int> wrong;
        for (size_t i = 0; i < m && wrong.size() < 10; i++)
            if (!truth.count(order[i])) wrong.push_back(order[i]);
        int* hashes;  // the query as Layer::queryActiveNodeandComputeActivations hashes it
        if (HashFunction == 2) hashes = output->_dwtaHasher->getHash(ids.data(), h.data(), d);
        else if (HashFunction == 4) hashes = output->_srp->getHashSparse(ids.data(), h.data(), d);
        else { fprintf(stderr, "probe: HashFunction %d is not probed\n", HashFunction); exit(2); }
        int* index = output->_hashTables->hashesToIndex(hashes);
        int** buckets = output->_hashTables->retrieveRaw(index);
        std::set<int> got;
        for (int t = 0; t < output->probe_tables(); t++) {
            if (!buckets[t]) continue;
            for (int j = 0; j < BUCKETSIZE; j++) {
                int id = buckets[t][j] - 1;
                if (id < 0) break;
                got.insert(id);
            }
        }
        delete[] hashes;
        delete[] index;
        delete[] buckets;
        int found = 0;
        for (int w : wrong) found += (int)got.count(w);
        if (!wrong.empty()) {
            recall_sum += double(found) / wrong.size();
            with_wrong++;
        }
        hits += found;
        trials += wrong.size();
        retrieved_sum += got.size();
    }
    double n = pts.size(), m = nonzero, s2 = 0;
    for (double x : unit_sum) s2 += x * x;
    double retrieved = retrieved_sum / n, random = retrieved / n_labels;
    double recall = with_wrong ? recall_sum / with_wrong : NAN;
    double cosine = n > 1 ? (s2 - m) / (n * (n - 1)) : NAN;  // a zero vector: cosine 0 with every other
    fprintf(out, "{\"iteration\": %d, \"p_at_1\": %s, \"recall\": %s, \"retrieved\": %s, \"random_recall\": %s, "
                 "\"over_random\": %s, \"hits\": %.0f, \"trials\": %.0f, \"hidden_cosine\": %s, \"points\": %.0f}\n",
            batches, slide_probe_number(p1 / n).c_str(), slide_probe_number(recall).c_str(),
            slide_probe_number(retrieved).c_str(), slide_probe_number(random).c_str(),
            slide_probe_number(recall / random).c_str(), hits, trials, slide_probe_number(cosine).c_str(), n);
    fflush(out);
}

static void slide_probe(Network* net, const std::string& test_path, int batches_done) {
    static std::vector<int> at = slide_probe_batches();
    static FILE* out = fopen(getenv("PROBE_OUT") ? getenv("PROBE_OUT") : "probe.jsonl", "w");
    if (at.empty()) return;
    if (std::find(at.begin(), at.end(), batches_done) != at.end()) slide_probe_write(net, test_path, batches_done, out);
    if (batches_done >= *std::max_element(at.begin(), at.end())) {
        fclose(out);
        exit(0);
    }
}
