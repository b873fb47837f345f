"""A fictional, born-digital, two-column clinical guideline PDF for demos and tests.

:func:`write_sample_pdf` typesets the sample with PyMuPDF only (no downloads, no shared data), so
the README's main job runs from a fresh clone. The document has a title block, numbered headings
on three levels, paragraphs, bulleted and numbered lists, recommendation boxes, a raster figure
with a caption, a full-width table that continues on the next page with its header row repeated,
and running page headers/footers with page numbers. All text is invented sample content.

Text is set with PyMuPDF's ``TextWriter`` and embedded Helvetica (no ligatures, so the text layer
reads back exactly as written). Output bytes are deterministic for a given PyMuPDF version.

Command line: ``python -m grounded.samples OUT.pdf``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..io.atomic import atomic_write_bytes
from .typeset import (
    COL_W,
    FULL_W,
    GREY,
    INK,
    MARGIN_X,
    PAGE_H,
    PAGE_W,
    _block_units,
    _Box,
    _Canvas,
    _Columns,
    _Figure,
    _Flow,
    _Fonts,
    _Heading,
    _List,
    _Para,
    _Table,
    _table_units,
    _text_units,
    _Unit,
)

__all__ = [
    "write_sample_pdf",
    "sample_pdf_bytes",
    "SAMPLE_TITLE",
]

SAMPLE_TITLE = "Clinical practice guideline: management of early-stage breast cancer"

def _title_units(fonts: _Fonts) -> list[_Unit]:
    units = _text_units(fonts, _DISCLAIMER, FULL_W, size=8.0, lead=10.0, style="b", color=(0.65, 0.1, 0.1))
    units += _text_units(fonts, SAMPLE_TITLE, FULL_W, size=19.0, lead=23.0, style="b", color=INK, gap=10.0)
    units[-1].toc = (1, SAMPLE_TITLE)
    units += _text_units(fonts, _AUTHORS, FULL_W, size=9.5, lead=12.0, style="i", color=GREY, gap=6.0)
    units += _text_units(fonts, _SUMMARY, FULL_W, size=9.5, lead=12.6, gap=10.0)

    def rule(c: _Canvas, pno: int, x: float, top: float) -> None:
        c.hline(pno, x, x + FULL_W, top + 6.0, INK, 0.8)

    units.append(_Unit(12.0, rule, gap_before=2.0))
    return units


def _running_heads(canvas: _Canvas) -> None:
    total = canvas.page_count
    for pno in range(total):
        canvas.text(pno, MARGIN_X, 40.0, "Northbridge Oncology Guideline Group (fictional)", "i", 8.0, GREY)
        right = "Early-stage breast cancer \u2014 SAMPLE v0.9"
        canvas.text(pno, PAGE_W - MARGIN_X - canvas.fonts.width(right, "", 8.0), 40.0, right, "", 8.0, GREY)
        canvas.hline(pno, MARGIN_X, PAGE_W - MARGIN_X, 45.0)
        canvas.hline(pno, MARGIN_X, PAGE_W - MARGIN_X, PAGE_H - 44.0)
        left = "Sample document for software testing \u2014 not for clinical use"
        canvas.text(pno, MARGIN_X, PAGE_H - 32.0, left, "", 7.5, GREY)
        number = f"Page {pno + 1} of {total}"
        canvas.text(pno, PAGE_W - MARGIN_X - canvas.fonts.width(number, "", 8.0), PAGE_H - 32.0, number, "", 8.0, GREY)


def sample_pdf_bytes() -> bytes:
    """The sample guideline as PDF bytes (deterministic for a given PyMuPDF version)."""
    fonts = _Fonts()
    canvas = _Canvas(fonts)
    flow = _Flow(canvas)
    flow.full(_title_units(fonts))
    counters = [0, 0, 0]
    for segment in _DOCUMENT:
        if isinstance(segment, _Table):
            units, repeat = _table_units(fonts, segment)
            flow.full(units, repeat)
            flow.y += 10.0
        else:
            units = [u for block in segment.blocks for u in _block_units(fonts, block, COL_W, counters)]
            flow.columns(units)
    _running_heads(canvas)
    return canvas.finish({
        "title": SAMPLE_TITLE + " (SAMPLE)",
        "author": "Northbridge Oncology Guideline Group (fictional)",
        "subject": "Fictional sample guideline for testing document parsing; not medical advice",
        "keywords": "sample, fictional, breast cancer, guideline, grounded",
        "creator": "grounded.samples",
        "producer": "PyMuPDF",
    })


def write_sample_pdf(path: str | Path) -> Path:
    """Write the sample guideline PDF to ``path`` atomically and return the path."""
    return atomic_write_bytes(path, sample_pdf_bytes())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grounded.samples", description=write_sample_pdf.__doc__)
    parser.add_argument("out", type=Path, help="where to write the sample PDF (e.g. sample_guideline.pdf)")
    args = parser.parse_args(argv)
    try:
        path = write_sample_pdf(args.out)
    except OSError as exc:
        sys.stderr.write(f"grounded.samples: error: cannot write {args.out}: {exc.strerror or exc}\n")
        return 1
    sys.stdout.write(f"{path}\n")
    return 0


# == content (fictional) ===========================================================================
_DISCLAIMER = (
    "SAMPLE DOCUMENT \u2014 fictional guideline generated for software testing. Organisations, panel, "
    "evidence summaries and recommendations are invented; not reviewed; not for patient care."
)
_AUTHORS = "Northbridge Oncology Guideline Group (fictional) \u00b7 Version 0.9 (sample) \u00b7 Guideline NOG-BC-01"
_SUMMARY = (
    "**Summary.** This sample guideline describes the assessment and treatment of adults with early-stage "
    "invasive breast cancer. It covers diagnosis and staging, surgery of the breast and axilla, adjuvant and "
    "neoadjuvant systemic therapy, radiotherapy and follow-up. Recommendations are graded by level of evidence "
    "(I\u2013IV) and strength (strong or conditional). The text is written to resemble a real guideline so that "
    "parsers, chunkers and highlighters can be tested on realistic structure: numbered sections, lists, boxes, "
    "a figure and a table that continues across a page break."
)

_DOCUMENT: list[_Columns | _Table] = [
    _Columns([
        _Heading(1, "Introduction"),
        _Heading(2, "Scope and purpose"),
        _Para(
            "Breast cancer is the most frequently diagnosed cancer in women in many regions, and most patients "
            "present with disease that is confined to the breast and regional lymph nodes. Outcomes for "
            "early-stage disease are generally favourable, but they depend on timely diagnosis, accurate staging "
            "and a treatment plan that matches the biology of the tumour."
        ),
        _Para(
            "This guideline gives recommendations for the care of adults with newly diagnosed, early-stage "
            "invasive breast cancer (stages I to IIIA). It is intended for surgeons, medical and radiation "
            "oncologists, radiologists, pathologists, specialist nurses and the multidisciplinary teams in which "
            "they work. It does not replace clinical judgement, and every recommendation should be discussed "
            "with the patient in the light of her or his preferences and circumstances."
        ),
        _Heading(2, "Target population"),
        _Para("The recommendations apply to the following groups of patients:"),
        _List([
            "adults (18 years and older) with histologically confirmed invasive carcinoma of the breast;",
            "patients with clinical stage I, II or IIIA disease, including those treated with neoadjuvant therapy;",
            "men with breast cancer, for whom the evidence is extrapolated from trials in women;",
            "patients with a germline pathogenic variant, where the treatment differs from the general pathway.",
        ]),
        _Para(
            "Ductal carcinoma in situ, metastatic disease, phyllodes tumours and breast lymphoma are outside the "
            "scope of this document and are covered by separate sample guidelines of the group."
        ),
        _Heading(2, "Methods and grading of recommendations"),
        _Para(
            "A fictional panel of twelve clinicians and two patient representatives drafted the recommendations "
            "after a structured review of randomised trials, meta-analyses and cohort studies. Each recommendation "
            "carries a level of evidence and a strength. The levels used in this sample are:"
        ),
        _List([
            "**Level I:** evidence from at least one large randomised trial of good quality or a meta-analysis "
            "of randomised trials without heterogeneity.",
            "**Level II:** small randomised trials, or large randomised trials with a suspicion of bias.",
            "**Level III:** prospective cohort studies and well-designed case-control studies.",
            "**Level IV:** retrospective studies, expert opinion and consensus of the panel.",
        ], ordered=True),
        _Para(
            "A *strong* recommendation means that the panel is confident that the benefits clearly outweigh the "
            "harms for most patients. A *conditional* recommendation means that the balance is closer and that "
            "the choice depends more on values, comorbidity and the resources available."
        ),
        _Heading(1, "Diagnosis and staging"),
        _Heading(2, "Clinical assessment"),
        _Para(
            "Every patient referred with a suspected breast cancer should undergo a triple assessment in a "
            "dedicated clinic: clinical examination, imaging and needle biopsy, ideally completed in a single "
            "visit. The history should record at least:"
        ),
        _List([
            "the duration of symptoms and any change in size of the lump;",
            "menopausal status, pregnancy and lactation;",
            "personal or family history of breast, ovarian, pancreatic or prostate cancer;",
            "previous chest irradiation and current medication, including hormone therapy;",
            "comorbidities and performance status that may influence treatment choices.",
        ]),
        _Heading(2, "Imaging"),
        _Heading(3, "Mammography and ultrasound"),
        _Para(
            "Bilateral mammography with tomosynthesis where available, together with ultrasound of the breast and "
            "the axilla, is the standard initial work-up. Ultrasound-guided core biopsy of the lesion and of any "
            "morphologically abnormal axillary lymph node should be performed before treatment is started."
        ),
        _Heading(3, "Magnetic resonance imaging"),
        _Para(
            "Breast MRI is not required for every patient. It is useful for invasive lobular carcinoma, for dense "
            "breasts when the extent of disease is uncertain, for discordant findings between examination and "
            "imaging, and before neoadjuvant therapy to document the baseline extent of the tumour."
        ),
        _Box(
            "Recommendation 1 (strong; level II)",
            "Offer breast MRI only when its result may change the surgical plan, for example lobular histology, "
            "suspected multicentric disease or a discrepancy between clinical and mammographic tumour size.",
        ),
        _Heading(2, "Pathology"),
        _Para(
            "The diagnostic core biopsy and the surgical specimen should be reported with a structured template. "
            "The report of the invasive tumour includes:"
        ),
        _List([
            "histological type and grade (Nottingham system);",
            "tumour size in millimetres and the distance to each margin;",
            "lymphovascular invasion and the number of involved lymph nodes;",
            "oestrogen receptor (ER) and progesterone receptor (PR) status with the percentage of positive cells;",
            "HER2 status by immunohistochemistry, confirmed by in situ hybridisation when the score is 2+;",
            "the Ki-67 proliferation index, where the laboratory has validated the assay.",
        ]),
        _Heading(2, "Staging investigations"),
        _Para(
            "Routine staging with computed tomography or bone scintigraphy is not recommended for stage I disease "
            "without symptoms, because the yield is low and false-positive findings are common. Systemic staging "
            "should be considered for clinical stage IIB or higher, for large node-positive tumours, and for "
            "patients with symptoms or laboratory results that suggest metastatic spread."
        ),
        _Heading(1, "Surgical management"),
        _Heading(2, "Breast-conserving surgery"),
        _Para(
            "Breast-conserving surgery followed by radiotherapy gives survival equivalent to mastectomy for most "
            "patients with unifocal tumours. The aim is complete excision with clear margins and a good cosmetic "
            "result. *No ink on tumour* is an adequate margin for invasive cancer, and re-excision for wider "
            "margins is not needed."
        ),
        _Para(
            "Oncoplastic techniques allow larger excisions without deformity and should be available in every "
            "breast unit. The tumour bed is marked with surgical clips to guide the radiotherapy boost."
        ),
        _Heading(2, "Mastectomy and reconstruction"),
        _Para(
            "Mastectomy is indicated when the tumour is large relative to the breast, when disease is multicentric, "
            "when radiotherapy is contraindicated, or when the patient prefers it after counselling. Immediate "
            "reconstruction should be discussed with every patient who needs a mastectomy."
        ),
        _Heading(2, "Axillary staging"),
        _Para(
            "Sentinel lymph node biopsy is the standard staging procedure for patients with a clinically and "
            "radiologically negative axilla. The recommended sequence is:"
        ),
        _List([
            "Dual mapping with a radioisotope and blue dye, or an equivalent tracer, at the time of surgery.",
            "Removal of all sentinel nodes and of any palpable suspicious node.",
            "Completion axillary dissection only when three or more sentinel nodes contain macrometastases.",
            "Axillary radiotherapy instead of dissection for one or two positive nodes when criteria are met.",
        ], ordered=True),
        _Figure(
            "**Figure 1.** Simplified treatment pathway for early-stage breast cancer (sample illustration). "
            "Each step is discussed by the multidisciplinary team before it starts.",
            168.0,
        ),
        _Box(
            "Recommendation 2 (strong; level I)",
            "Do not perform axillary lymph node dissection in patients with one or two positive sentinel nodes "
            "who undergo breast-conserving surgery and whole-breast radiotherapy.",
        ),
        _Heading(1, "Systemic therapy"),
        _Heading(2, "Principles"),
        _Para(
            "Adjuvant systemic therapy reduces the risk of recurrence and death. The choice of treatment is "
            "driven by the tumour subtype defined by ER, PR and HER2, by the anatomical stage and, for "
            "hormone receptor-positive disease, by genomic risk scores where they are available."
        ),
        _Heading(2, "Endocrine therapy"),
        _Para(
            "All patients with ER-positive invasive cancer should be offered endocrine therapy for at least five "
            "years. The choice of agent depends on menopausal status:"
        ),
        _List([
            "premenopausal patients: tamoxifen, or ovarian function suppression with an aromatase inhibitor "
            "when the risk of recurrence is high;",
            "postmenopausal patients: an aromatase inhibitor, with tamoxifen as an alternative;",
            "extended therapy to seven or ten years for node-positive disease after shared decision making.",
        ]),
        _Heading(2, "Chemotherapy and targeted therapy"),
        _Para(
            "Table 1 summarises the preferred adjuvant regimens by subtype and clinical situation. Doses and "
            "schedules are illustrative and must be checked against local protocols."
        ),
    ]),
    _Table(
        "**Table 1.** Preferred adjuvant systemic regimens by tumour subtype (illustrative sample values).",
        ["Subtype", "Clinical situation", "Preferred regimen", "Duration", "Evidence"],
        [
            ["HR+/HER2\u2212", "Node-negative, low genomic risk", "Endocrine therapy alone", "5 years", "I, strong"],
            ["HR+/HER2\u2212", "Node-negative, high genomic risk", "Chemotherapy (TC or AC-T) then endocrine therapy",
             "4\u20136 months + 5 years", "I, strong"],
            ["HR+/HER2\u2212", "1\u20133 positive nodes, postmenopausal", "Endocrine therapy; chemotherapy if high genomic risk",
             "5\u201310 years", "I, strong"],
            ["HR+/HER2\u2212", "1\u20133 positive nodes, premenopausal", "Chemotherapy, then ovarian suppression + AI",
             "5 years", "II, conditional"],
            ["HR+/HER2\u2212", "4 or more positive nodes", "Anthracycline and taxane, then endocrine therapy",
             "6 months + 5\u201310 years", "I, strong"],
            ["HR+/HER2\u2212", "High risk, germline BRCA variant", "Add adjuvant olaparib after chemotherapy",
             "1 year", "I, strong"],
            ["HR+/HER2\u2212", "Older patient, significant comorbidity", "Endocrine therapy; omit chemotherapy",
             "5 years", "III, conditional"],
            ["HR+/HER2\u2212", "Premenopausal, node-negative, low risk", "Tamoxifen alone", "5 years",
             "I, strong"],
            ["HER2+", "Older or frail patient", "Trastuzumab with endocrine therapy or a single taxane",
             "1 year", "III, conditional"],
            ["HER2+", "T1a\u2013b, node-negative", "Weekly paclitaxel + trastuzumab", "12 weeks + 1 year",
             "II, conditional"],
            ["HER2+", "T1c, node-negative", "Paclitaxel + trastuzumab, or TCH", "3 months + 1 year", "II, strong"],
            ["HER2+", "T2 or larger, or node-positive", "Neoadjuvant TCHP (see section 4.4)", "6 cycles + 1 year",
             "I, strong"],
            ["HER2+", "Residual disease after neoadjuvant therapy", "Switch to trastuzumab emtansine",
             "14 cycles", "I, strong"],
            ["HER2+", "Pathological complete response", "Complete trastuzumab \u00b1 pertuzumab", "1 year in total",
             "I, strong"],
            ["Triple-negative", "T1a\u2013b, node-negative", "Consider no chemotherapy", "\u2014", "III, conditional"],
            ["Triple-negative", "T1c, node-negative", "Anthracycline and taxane, or TC", "4\u20136 months",
             "I, strong"],
            ["Triple-negative", "T2 or larger, or node-positive", "Neoadjuvant chemotherapy + pembrolizumab",
             "6 months + 1 year", "I, strong"],
            ["Triple-negative", "Residual disease after neoadjuvant therapy", "Capecitabine, or olaparib if BRCA variant",
             "6 months / 1 year", "I, strong"],
            ["Any subtype", "Pregnancy (second or third trimester)", "Anthracycline-based chemotherapy; no trastuzumab",
             "Until delivery", "III, conditional"],
            ["Any subtype", "Male breast cancer, HR-positive", "Tamoxifen; AI only with testicular suppression",
             "5\u201310 years", "III, conditional"],
            ["Any subtype", "Premenopausal, wishes to preserve fertility", "GnRH analogue during chemotherapy",
             "During chemotherapy", "I, conditional"],
            ["Any subtype", "Postmenopausal, high risk of recurrence", "Add bisphosphonate (zoledronic acid)",
             "3\u20135 years", "I, conditional"],
        ],
        [0.15, 0.27, 0.31, 0.15, 0.12],
        note="AC-T, doxorubicin and cyclophosphamide followed by a taxane; AI, aromatase inhibitor; TC, docetaxel and "
        "cyclophosphamide; TCH(P), docetaxel, carboplatin, trastuzumab (and pertuzumab). Fictional sample table.",
    ),
    _Columns([
        _Para(
            "Chemotherapy should start within six weeks of surgery. Patients older than 70 years benefit from a "
            "geriatric assessment before chemotherapy is offered, because fitness rather than age predicts "
            "tolerance. Scalp cooling may be offered to reduce hair loss with taxane-based regimens."
        ),
        _Heading(2, "Neoadjuvant therapy"),
        _Para(
            "Neoadjuvant systemic therapy is preferred for HER2-positive and triple-negative tumours larger than "
            "two centimetres or with involved nodes. It allows downstaging of the breast and axilla and gives "
            "information on response that guides adjuvant treatment. A marker clip is placed in the tumour and in "
            "any biopsied node before treatment begins."
        ),
        _Box(
            "Recommendation 3 (strong; level I)",
            "Offer adjuvant trastuzumab emtansine to patients with HER2-positive disease who have residual invasive "
            "cancer in the breast or axilla after neoadjuvant therapy.",
        ),
        _Heading(1, "Radiotherapy"),
        _Heading(2, "Whole-breast irradiation"),
        _Para(
            "Whole-breast radiotherapy after breast-conserving surgery halves the risk of local recurrence. "
            "Moderately hypofractionated schedules (40 Gy in 15 fractions) or ultra-hypofractionated schedules "
            "(26 Gy in 5 fractions over one week) are the standard of care. A tumour bed boost is given to "
            "younger patients and to those with high-grade tumours."
        ),
        _Heading(2, "Partial-breast irradiation and omission"),
        _Para(
            "Partial-breast irradiation is an option for patients aged 50 years or older with small, node-negative, "
            "hormone receptor-positive tumours and clear margins. Omission of radiotherapy may be discussed with "
            "patients aged 70 years or older who will take endocrine therapy."
        ),
        _Heading(2, "Post-mastectomy radiotherapy"),
        _Para(
            "Chest wall and regional nodal irradiation is recommended after mastectomy for four or more involved "
            "nodes and for T3\u2013T4 tumours, and should be considered for one to three involved nodes when "
            "other risk factors are present."
        ),
        _Heading(1, "Follow-up and survivorship"),
        _Para("After primary treatment, patients should be followed according to the following schedule:"),
        _List([
            "clinical review every 3\u20136 months for the first three years, then every 6\u201312 months;",
            "annual bilateral mammography (or of the remaining breast after mastectomy);",
            "bone density measurement before and during aromatase inhibitor therapy;",
            "no routine tumour markers or imaging in the absence of symptoms.",
        ], ordered=True),
        _Para(
            "Survivorship care addresses fatigue, lymphoedema, sexual health, fertility and return to work. A "
            "written care plan summarising the treatment received and the follow-up arranged should be given to "
            "the patient and to the primary care physician."
        ),
    ]),
]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
