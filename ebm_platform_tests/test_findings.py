"""Findings, not background: the sentences `ebm ask` may quote as its core answer, and GRADE-style
certainty with every downgrade named. Sentences are quoted from the demo lake's real windows."""

from __future__ import annotations

from ebm_platform.retrieval.answer import assess_certainty, label_shared_windows
from ebm_platform.retrieval.findings import (
    arm_words,
    favours_another_arm_over,
    is_finding,
    is_protocol,
    names_question,
    naming_words,
    within_one_arm,
    without_markers,
)
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.vocabulary import Anchors

# one trial's change within its McKenzie arm, and its comparison of the two arms (the demo's Pilates question)
MCKENZIE_WITHIN = (
    "In the present study, 6 weeks of McKenzie training led to significant reduction in pain levels in men with "
    "chronic low back pain."
)
PILATES_MCKENZIE_BETWEEN = (
    "After therapeutic exercises, there was no significant difference between Pilates and McKenzie groups in pain "
    "relief (P = 0.327)."
)

BACKGROUND = [
    # an outcome's name, a research agenda, a spirometry unit: no conclusion (Evidence Inference train articles)
    "The primary efficacy variable was the average FEV1 from the first intake of study drug to 90 minutes.",
    "Further trials studying interventions for lymphocytic colitis are warranted.",
    # a guideline's research agenda, quoted as grade A support for exercise (the demo's low back pain answer)
    "One of the areas for future research is the effectiveness of CBT interventions specifically designed to "
    "address pain such as cognitive behavioral therapy for chronic pain (CBT-CP).",
    "| Mean FEV1 (% predicted) | 94.6 (14.1) | 95.2 (14.4) |",
    # the sample and its balance at baseline (the demo's ankle sprain answer)
    "Ninety-five males (49 %) were included.",
    # the sample's make-up, the core of the demo's hyaluronic acid answer (2026-12-05)
    "The mean duration of knee osteoarthritis was 3 years; 27.9 % (29/104) of patients underwent knee surgery (the "
    "main operation was meniscectomy; 35.7 %, 10/28).",
    "The most frequent locations of knee osteoarthritis were the medial compartment (34.8 %; 39/112), "
    "tricompartmental (32.2 %; 35/112), and patello-femoral/medial femoro-tibial (10.7 %; 12/112).",
    "One hundred and sixty-one (59 + 50 + 52) patients completed the study through final follow-up; 32 % lost at follow-up.",
    "There were no significant differences in any baseline characteristic between the three groups.",
    # the arms' balance at the start (Evidence Inference validation answers led by these once tables were left out)
    "There were no differences between groups in energy intakes, GI, GL, or other macronutrient at baseline.",
    "No significant difference was seen between the two fractionation schedules for the characteristics "
    "studied at the start of RT.",
    # a table quoted whole, its caption first (the demo's tennis elbow answer)
    "Descriptive statistics for pain scores in the intralesional and intramuscular groups |  | Intralesional | "
    "Intramuscular | |  | Baseline | 6 weeks | Change | Baseline | 6 weeks | Change | Mean 6.1 | 2.3 | p < 0.01 |",
    # a protocol's plan and a design statement, quoted as findings in the demo's answers
    "Study participants will be asked to avoid significant changes in medical/healthcare management of their LBP.",
    "The patient will be recommended to avoid remaining in bed and to keep as active as possible.",
    "The injection of autologous blood is compared with the standard practice of local corticosteroid injection.",
    "Although 90% of the episodes of acute low back pain settle within six weeks, up to 7% of patients develop chronic pain [1].",
    "There is strong evidence that exercise is an effective treatment in chronic low-back pain [48].",
    "Non-specific chronic low back pain (NSCLBP) is one of the most common musculoskeletal disorders around the world including Iran.",
    "(2008) in their systematic reviews affirmed that exercises were effective in reducing pain in people with chronic LBP.",
    # what a drug is known to do, quoted against the demo's joint lavage answer as contradicting it (2026-12-05)
    "In particular, the drug has been known to reduce pain and symptomatic severity and improve functional capacity "
    "of an injured joint, especially in cases of knee OA10).",
    "Patients with chronic low back pain are responsible for 80% of the costs paid for the treatment of low back pain.",
    "Therefore, more research is needed to determine the best duration and treatment method to reduce and improve general health in patients with low back pain.",
    "Sixty patients were randomly assigned to Pilates or McKenzie training and compared after six weeks.",
    # how an outcome was analysed (the demo lake's knee arthroscopy trial, its methods)
    "The scale was later dichotomized and analyzed as follows: (1) marked worsening, moderate worsening or no "
    "change from baseline versus (2) moderate improvement, marked improvement or asymptomatic knee.",
    # a definition (the VA/DoD guideline's text, a footnote run into it by the PDF extraction)
    "Structured, clinician-directed exercise programs are those involving organized and progressive k "
    "Recommendations for “patients with low back pain” encompass patient populations with acute, subacute, "
    "or chronic LBP with or without neurological symptoms.",
    # another study's result, in a trial's discussion (the demo's patellofemoral question quoted it)
    "They found significant weakness of the hip abductors and external rotators of the patellofemoral pain group.",
    # how common the condition is: no comparison of groups
    "The prevalence of chronic low back pain increased by 50% over the last decade.",
    # the arms' balance at baseline (an Evidence Inference article; sr_rag's answer quoted it first)
    "(NRS: Numerical pain rating score; DOA:duration of analgesia) Demographic profile in terms of age, weight and "
    "sex distribution, as well as duration of surgery, was comparable between both the groups [Table 1].",
    "Baseline characteristics of the two groups were comparable.",
    # the groups' balance before treatment (the demo's acupuncture answer read "No" from it, 2026-12-06)
    "There were no significant differences in age, weight, and pre-treatment values regarding pain conditions among "
    "the three groups (Table 1).",
    # earlier work of the authors (the demo's rotator cuff answer rested on it: "no significant difference")
    "The decision tree was previously tested in patients with SIS to improve weaknesses and to test its practicability.",
    # how the study was run, quoted as findings in the demo's answers (2026-12-02): a sample-size calculation, the
    # analysis plan, an instrument's definition, the sample's make-up, what the authors used
    "To detect a difference in SPADI on 10 points between the groups with a statistical power of 80 % and a "
    "significance level of 0.05 we need 50 persons in each group.",
    "All tests were two-sided, and the statistical significance was set at 0.05.",
    "Global Perceived Effect (GPE) measures overall improvement or worsening.",
    "Among study subjects, 52% were male and the mean age was 64.4 years, with statistically significant "
    "differences between HA2 and HA3 (p=0.007).",
    "We used the hot pack to induce vasodilitation and reduce muscle spasm in this study.",
    "To assess the effectiveness of viscosupplementation or platelet-rich plasma (PRP), compared to standard care, "
    "for pain relief after knee arthroscopic debridement.",
    # a protocol's expectation, a trend, an abstract's background run into its title
    "A positive result will support current practice, while no difference between the groups indicates that the "
    "use of rESWT for subacromial shoulder pain should not be recommended.",
    "Radial ESWT is being increasingly used for musculoskeletal complaints including subacromial shoulder pain.",
    # a topical diclofenac trial's introduction, quoted in the core of the demo's topical NSAIDs answer (2026-12-05)
    "Efficacy of a treatment is being expressed increasingly as a dichotomous result, e.g. \"Did the patient's pain "
    'improve by 50%; yes or no?".',
    "Through their vast meta-analysis of suitable trials, the authors found that for trials of oral NSAIDs vs. "
    "placebo the responder rates were 65.4% and 45.9% respectively.",
    "Efficacy of adding a physiotherapy rehabilitation program to arthroscopic management of femoroacetabular "
    "impingement: The FAIR randomised controlled trial Background: It is unknown if rehabilitation improves outcomes.",
    # other work: reviews a trial cites, a reference printed as a superscript
    "In summary, reviews showed that manual therapy is an effective method but compared to controls there is in "
    "general no clear evidence that one of them is superior.",
    "Edwards and Calandruccio,10 investigating autologous blood injections in 28 patients, found that 22 patients "
    "(79%) had a reduction in pain over 9.5 months post-injection.",
    "The significant short-term benefits of corticosteroid injection are paradoxically reversed after six weeks, "
    "implying that this treatment should be used with caution in the management of tennis elbow.38 These are "
    "comparable to our results.",
    # an abstract's heading in brackets (the core of the demo's multidisciplinary rehabilitation answer, 2026-12-05)
    "[Purpose] Multidisciplinary treatments are recommended for treatment of chronic low back pain.",
    # a discussion's explanation of a result (the core of the demo's insoles answer, 2026-12-05)
    "However, one of the potential reasons could be due to an increased comfort in both the supported insole and "
    "the mobility shoe which reflected better perceived pain scores.",
    # what a review's trial compared, with no result (the demo's rotator cuff answer, 2026-12-05)
    "One trial compared manual therapy and exercise with placebo (inactive ultrasound therapy) in 120 participants "
    "with chronic rotator cuff disease (high quality evidence).",
    # a discussion's suggestions and what the studies a review pooled defined (the demo's neck pain, insoles and
    # topical NSAIDs answers, 2026-12-05)
    "However, because patients with acute pain or elderly persons with low cognitive abilities cannot actively "
    "participate in neck-stabilizing exercises, massage could be applied to the longus colli muscle, which is the "
    "deep neck flexor muscle, as an alternative method to improve strength and endurance.",
    "Understanding which treatment reduces medial loading and reduces pain may provide guidance in terms of which, "
    "if any, of these treatments is most likely to be efficacious for medial knee OA.",
    "Their definition of clinical success, representing approximately a 50% reduction of pain, was estimated using "
    "patient or physician global assessment as the outcome measure (4 trials and 1 trial, respectively).",
    # a discussion's guess at a mechanism (it supported the demo's motor control answer, 2026-12-05, night)
    "The mix of specific low-load motor control exercises and higher load unstable exercises might have increased "
    "the effect of exercises by trigging combined global and local muscle activation.",
    # what participants were told to do (the demo's knee osteoarthritis exercise answer quoted it in its core)
    "Patients in the current study were told to reduce the exercise intensity if pain during exercise was perceived "
    "as worse than 'acceptable', or persisted more than 24 hours.",
    # the arms' balance before treatment, and a discussion's guess at a mechanism and at what is not known of one
    # (the demo's shock wave, acupuncture and NSAIDs answers quoted them, 2026-12-07)
    "Initially there were no significant differences between the mean plantar fascia thickness of the two groups "
    "(P = 0.95).",
    "Before treatment, pain scores did not differ between the groups (p = 0.4).",
    "Acupressure on local and distal acupuncture points might result in sedation and relaxation, thereby reducing "
    "chronic neck pain.",
    "Compared with NSAIDs, the anti-pain mechanism of BNHS is still unclear.",
    # what has been studied, and a protocol's hypothesis (the demo's acupuncture and TENS answers quoted them)
    "The most widely studied method was acupuncture, with several studies examining the short-term and long-term "
    "effectiveness of the treatment in relieving clinical pain (16-18).",
    "Our hypothesis is that tDCS and TENS simultaneously combined are more effective in reducing the intensity of "
    "pain.",
    "The sham and the real TENS equipment will have the same appearance, but, after the initial 30 seconds, the "
    "current amplitude will gradually decrease.",
    # other studies' results, what is known, explanations, hypotheticals, advice on method, limitations and a table
    # heading: seeds of the demo's generated test questions ("What is the effect of capsule on internal rotation?",
    # "What is the effect of EDUCATION on strength?", "What is the effect of denosumab on translation?")
    "In contrast to our results, they observed that the study group showed better VAS and CSS patterns than the "
    "control groups at 1-month follow-up (P < 0.05).",
    "Previous data show that LPNIR is safe and effective in relieving chronic pain and other conditions.",
    "Moreover, contracture of the shoulder posterior capsule is known to cause internal rotation reduction in "
    "abduction at 90°31).",
    "This might explain why most measures of translation and rotation did not show any statistically significant "
    "differences.",
    "Various mechanisms explaining the pain reduction after joint mobilization have been proposed.",
    "If patients with higher levels of fear avoidance were less likely to improve from acupuncture, our lack of "
    "information on this variable would be a limitation of our study.",
    "Moreover, assessment of the effect of this method should focus on improvements in pain, function, and mood "
    "simultaneously.",
    "The limitations of our study include the small number of patients (n= 10) with the greatest loss of JSW.",
    "Recommendation (strength, direction and certainty of the evidence) A: EDUCATION A.1",
]
FINDINGS = [
    "In the present study, 6 weeks of McKenzie training led to significant reduction in pain levels in men with chronic low back pain.",
    "Exercise therapy appears to be slightly effective at decreasing pain and improving function in adults with chronic low-back pain, particularly in healthcare populations.",
    "Recommendation 10.For patients with chronic low back pain, we suggest spinal mobilization/manipulation.",
    "Pain at day 7 was lower with naproxen than with placebo (p = 0.01).",
    # the sample's make-up compared between groups is a result
    "The mean duration of hospital stay was 3.2 days in group A compared with 4.1 days in group B (p = 0.01).",
    # a comparison's result without result words (the demo lake's knee arthroscopy trial, its conclusion)
    "In this controlled trial involving patients with chronic PFPS, the outcome when arthroscopy was used in "
    "addition to a home exercise program was no better than when the home exercise program was used alone.",
    # Evidence Inference train-split evidence sentences: a trial's incidence is a result when groups are compared
    "There was no significant difference in the incidence of adverse effects between the LM and ETI groups (8.33 % vs 12.5 %, p > 0.05).",
    "However, the ventilation scores were comparable between the two devices in all the three positions.",
    "E-selectin and NO levels were not affected by either diet.",
    "Generally, AEs were mild-to-moderate in intensity, and their incidence was similar across the three treatment groups.",
    "Difference of BIS from baseline was not significant between two groups at most time points.",
    "When drug A was compared with placebo, pain fell significantly (p < 0.01).",
    # "vs.10" is no superscript reference (an Evidence Inference train-split evidence sentence)
    # the balance at baseline beside a later result (an Evidence Inference train-split evidence sentence)
    "There were no differences in utilization between the NetmumsHWD and TAU groups at baseline or at follow up.",
    "Morbidity and reoperation rates in the total laparoscopic, hand-assisted laparoscopic, and open groups were "
    "comparable (29 vs. 20 vs. 23 percent and 17 vs.10 vs. 13 percent, respectively).",
    # an association stated without result words (PubMedQA abstracts' results: their question's study went
    # unquoted, and so unread, when these were background)
    "Statistical analysis revealed that WBC was correlated positively with ISS, but negatively with GCS and RTS.",
    "Those who had participated in prevention programs were more likely to respond that they should participate.",
    "Low serum albumin was an independent predictor of mortality.",
    # a Cochrane review's conclusions (the demo lake's neck pain and knee reviews)
    "Low to moderate quality evidence supports the use of specific cervical and scapular stretching and "
    "strengthening exercise for chronic neck pain immediately post treatment.",
    "The short-term benefit of IA corticosteroids in treatment of knee OA is well established.",
    "The use of shock absorbing inserts in footwear probably reduces the incidence of stress fractures.",
    "The available evidence from the randomized trials is insufficient to advise on any specific conservative "
    "modality for treating exercise-related groin pain.",
    # what a review's trials compared, with their result
    "Two trials compared exercise with surgery in 180 participants and found no difference in pain.",
    "One trial compared exercise with placebo in 61 participants; pain improved more with exercise (RR 2.0).",
    # CD008402's main conclusion: the demo's foot orthoses answer quoted its adverse-effects sentence instead and read
    # "Yes" (2026-12-05)
    "While not robust, the available evidence does not reveal any clear advantage of foot orthoses over simple "
    "insoles or physiotherapy for patellofemoral pain.",
    # an early result, and the balance before treatment beside a later one (Evidence Inference train-split
    # evidence sentences)
    "Initially, glucagon concentrations after intranasal administration were lower than concentrations after "
    "intramuscular (P = 0.003).",
    "No significant differences were found among the three groups in terms of lubrication before the treatment "
    "(p=0.79) and four weeks after the treatment (p=0.17).",
    # participants who report ("they reported fewer hypoglycemic events": a PubMedQA trial's result)
    "Patients in the IC group had less weight gain than those in the IM group (1.3 vs 4.2 kg; P=.01), and they "
    "reported fewer hypoglycemic events (2.7 vs 4.3; P=.02).",
    # a result that gives what is known as its reason
    "As expected, since corticosteroid effects are known to be short, the VAS for the control group worsened at 3 "
    "months while it improved in the study group.",
]


def test_background_is_not_a_finding_and_results_are():
    assert [s for s in BACKGROUND if is_finding(s)] == []
    assert [s for s in FINDINGS if not is_finding(s)] == []


def test_a_list_of_abbreviations_is_no_finding_and_a_list_of_statistics_is():
    """The demo's NSAIDs answer listed a trial's table footnote, "ANCOVA = analysis of covariance; APID = actual
    pain intensity difference; ... CI = confidence interval; ...", as a finding."""
    glossary = (
        "ANCOVA = analysis of covariance; APID = actual pain intensity difference; CI = confidence interval; "
        "COX = cyclo-oxygenase; NSAID = nonsteroidal anti-inflammatory drug."
    )
    assert not is_finding(glossary, "Trial > Results")
    assert is_finding("The difference was 2.1 (SD = 1.1; n = 40; p = 0.03; CI = 0.2-4).", "Trial > Results")


def test_acupuncture_points_name_no_acupuncture():
    """The demo answered "Does acupuncture reduce neck pain?" from a trial of acupressure at acupuncture points, and
    "Does acupuncture help knee osteoarthritis pain?" from one that likened acupressure to it."""
    knee = Anchors(intervention="acupuncture", outcome="knee pain")
    likened = (
        "Similar to acupuncture, we found that 3 days of auricular acupressure can significantly lower opioid use."
    )
    assert not names_question(likened, knee) and names_question("Acupuncture reduced knee pain more than sham.", knee)
    question = Anchors(intervention="acupuncture", outcome="neck pain")
    acupressure = (
        "Comparative Effects of Acupressure at Local and Distal Acupuncture Points on Pain in Chronic Neck Pain"
    )
    assert not names_question("Pain improved in both groups.", question, acupressure)
    assert names_question(
        "Pain improved in both groups.", question, "Acupuncture at Houxi (SI 3) acupoint for neck pain"
    )


def test_shoe_inserts_are_insoles():
    """The demo answered "Are insoles effective for preventing lower limb stress fractures?" "Uncertain" beside
    Cochrane's "The use of shock absorbing inserts in footwear probably reduces the incidence of stress fractures"."""
    question = Anchors(intervention="insoles", outcome="stress fractures")
    assert names_question("The use of shock absorbing inserts in footwear probably reduces stress fractures.", question)


def test_a_coxib_is_an_nsaid():
    nsaids = question_anchors("Are NSAIDs effective for knee osteoarthritis pain?")
    assert names_question("Lumiracoxib was significantly superior to placebo for pain relief (P = 0.001).", nsaids)


def test_a_result_in_an_introduction_section_is_background_but_a_recommendation_is_not():
    result = "Pain at day 7 was lower with naproxen than with placebo (p = 0.01)."
    assert is_finding(result, "Ankle sprain trial > Results") and not is_finding(
        result, "Ankle sprain trial > Introduction"
    )
    assert is_finding("For adults we suggest exercise therapy.", "Guideline > Background")
    assert is_finding(result, "Dementia trial > Abstract > Methods and findings")
    # a subsection of the methods is the methods (the demo quoted a neck pain trial's description of its
    # ultrasound therapy, under "2. Material and Methods > 2.4. Treatment Programs > 2.4.1. ... Group")
    mechanism = "Ultrasound increases local metabolism, circulation and extensibility of connective tissue."
    assert is_finding(mechanism, "Neck pain trial > Discussion")
    assert not is_finding(
        mechanism, "Neck pain trial > 2. Material and Methods > 2.4. Treatment Programs > 2.4.1. Group"
    )
    assert is_finding(result, "Trial > Results > Pain") and not is_finding(result, "Introduction")


def test_a_guidelines_note_on_a_revision_states_no_finding():
    """The VA/DoD guideline's bookkeeping sentence was quoted as grade-A evidence; its recommendation, which
    carries the same label, stays a finding."""
    section = "VA/DoD Clinical Practice Guideline for the Diagnosis and Treatment of Low Back Pain > Text"
    assert not is_finding("Therefore, this is a Reviewed, New-replaced recommendation.", section)
    assert not is_finding("(113) Therefore, this is a Reviewed, Amended recommendation.", section)
    assert is_finding(
        "For patients with chronic low back pain, we suggest against offering a non-benzodiazepine muscle relaxant "
        "(Strength of recommendation: Weak against; Not changed).",
        section,
    )


def test_a_trial_protocol_states_no_finding():
    """The demo answered a neck pain question "Yes" from a protocol's background ("Rationale and design of a
    Randomized Controlled Trial"); a trial of "a standard exercise protocol" still reports results."""
    result = "Pain at 12 weeks was lower with manual therapy than with physiotherapy (p = 0.01)."
    for title in (
        "Manual therapy for neck pain. Rationale and design of a Randomized Controlled Trial (RCT)",
        "Acupuncture for chronic shoulder pain: study protocol for a randomized controlled trial",
        "Dexamethasone for plantar fasciitis: protocol for a randomised controlled trial",
        "Acupuncture for acute low back pain: a randomised controlled multicentre trial protocol",
    ):
        assert is_protocol(title) and not is_finding(result, f"{title} > Abstract > Results")
    title = "Individualized physiotherapy compared to a standard exercise protocol: a randomized controlled trial"
    assert not is_protocol(title) and is_finding(result, f"{title} > Abstract > Results")


def test_quotes_lose_their_source_citation_markers():
    assert (
        without_markers("up to 7% of patients develop chronic pain [1].")
        == "up to 7% of patients develop chronic pain."
    )
    assert without_markers("as reported [3-5], [7] before") == "as reported before"
    # a guideline's reference numbers: a list anywhere, a number or range that opens the sentence
    assert without_markers("(105, 106, 120) While some studies found no differences.") == (
        "While some studies found no differences."
    )
    assert without_markers("(121- 128) Exercise helped.") == "Exercise helped."
    assert without_markers("Based on SRs ( 94-96, 100, 101) and RCTs.") == "Based on SRs and RCTs."
    # a scale, a year list, a percentage and a single number inside the sentence stay
    kept = "Pain (0-10) fell in 12 (40%) patients (2019, 2020) of group (1)."
    assert without_markers(kept) == kept


def test_a_statement_answers_the_question_only_when_it_names_its_intervention_or_comparator():
    anchors = Anchors(intervention="exercise therapy", outcome="pain")
    assert names_question(FINDINGS[1], anchors)
    assert not names_question("For patients with chronic low back pain, we suggest spinal mobilization.", anchors)
    assert names_question("anything at all", Anchors(outcome="pain"))  # the question names no I or C
    # a trial's result names its arms "group A"; its title names them
    assert not names_question("Pain fell more in group A (p = 0.01).", anchors)
    assert names_question("Pain fell more in group A (p = 0.01).", anchors, "Exercise therapy for neck pain")
    # surgery and conservative care in other words; conservative care takes in exercise, not the other way round
    surgery = Anchors(intervention="surgery", comparator="conservative treatment")
    assert names_question("Exercise alone led to less improvement than surgical repair.", surgery)
    assert names_question("Non-operative care was as good.", surgery)
    assert not names_question("Conservative care was as good.", Anchors(intervention="exercise", outcome="pain"))


def test_a_word_the_question_writes_closed_names_a_source_that_writes_it_open():
    """The demo answered "Does shockwave therapy reduce pain in lateral elbow tendinopathy?" with "no cited
    finding mentions 'shockwave'" over a Cochrane review of "shock wave therapy"."""
    shockwave = question_anchors("Does shockwave therapy reduce pain in lateral elbow tendinopathy?")
    assert names_question("Shock wave therapy provides little or no benefit in terms of pain.", shockwave)
    assert names_question("Radial shock waves reduced pain (p = 0.01).", shockwave)
    assert not names_question("Laser therapy reduced pain (p = 0.01).", shockwave)
    weight_bearing = Anchors(intervention="early weightbearing", outcome="function")
    assert names_question("Early weight-bearing improved function (p < 0.05).", weight_bearing)
    # only adjacent words join: "weight and bearing" is not "weightbearing"
    assert not names_question("Body weight and bearing surface did not differ.", Anchors(intervention="weightbearing"))


def test_a_statement_favours_another_arm_only_when_the_question_names_what_it_is_compared_to():
    bed = question_anchors("Should patients with acute low back pain stay in bed?")
    assert favours_another_arm_over("Small benefits from advice to stay active compared to advice to rest in bed.", bed)
    assert not favours_another_arm_over("Bed rest was better than exercise for pain (p = 0.01).", bed)
    # a risk factor's size, and a time span, are no comparison of treatments (a PubMedQA answer turned by both)
    obesity = Anchors(intervention="obesity predict knee pain over fourteen years in women")
    assert not favours_another_arm_over(
        "A greater BMI and change in BMI over 15 years were significant predictors of knee pain.", obesity
    )


def test_only_the_words_that_tell_the_arms_apart_name_a_comparison():
    anchors = Anchors(intervention="hip strengthening added to knee exercise", comparator="knee exercise alone")
    assert not names_question("Knee exercise reduced pain compared with rest (p < 0.01).", anchors)
    assert names_question("Hip strengthening reduced pain (p < 0.01).", anchors)
    usual_care = Anchors(intervention="exercise therapy", comparator="usual care")
    assert names_question("Exercise therapy did not reduce pain (p = 0.4).", usual_care)


def test_a_control_arm_that_every_trial_names_does_not_name_the_question():
    """The demo's "parecoxib compared with control on pain relief" quoted a guideline's "pregabalin versus active
    analgesic control" and a buprenorphine trial's "pain control was superior in the BBUP group"."""
    parecoxib = Anchors(intervention="parecoxib", comparator="control", outcome="pain relief")
    assert arm_words(parecoxib) == ["parecoxib", "control"] and naming_words(parecoxib) == ["parecoxib"]
    assert not names_question("Pain control was superior in the BBUP group compared with placebo.", parecoxib)
    assert names_question("Parecoxib use did not differ from the control group (P = 0.238).", parecoxib)
    usual_care = Anchors(intervention="exercise therapy", comparator="usual care")
    assert not names_question("Usual care did not reduce pain (p = 0.4).", usual_care)
    # the trial's title names the intervention that its result calls "the experimental group"
    assert names_question("Usual care did not reduce pain (p = 0.4).", usual_care, "Exercise therapy for neck pain")
    # arms that differ only by the control: the intervention's own words name them
    assert naming_words(Anchors(intervention="TENS", comparator="sham TENS")) == ["tens"]
    # an intervention of generic words only keeps the control's
    assert naming_words(Anchors(intervention="intervention", comparator="placebo")) == ["placebo"]
    # arms that differ by a qualifier only are named by what they share
    gabapentin = Anchors(intervention="With gabapentin", comparator="Without gabapentin")
    assert arm_words(gabapentin) == ["gabapentin"]


def test_where_a_treatment_is_applied_does_not_name_it_alone():
    bracing = question_anchors("Does knee bracing reduce pain in patellofemoral pain?")
    taping = "Data from 161 knees found no significant difference between taping and no taping in pain."
    assert naming_words(bracing) == ["bracing"] and arm_words(bracing) == ["knee", "bracing"]
    assert not names_question(taping, bracing)
    assert names_question("Knee bracing did not reduce pain (p = 0.4).", bracing)
    # with two arms the site may be what tells them apart
    hip = Anchors(intervention="hip strengthening added to knee exercise", comparator="knee exercise alone")
    assert "hip" in naming_words(hip)
    # a site alone is kept when nothing else names the arm
    assert naming_words(Anchors(intervention="knee", outcome="pain")) == ["knee"]


def test_a_change_within_one_arm_does_not_compare_the_arms():
    anchors = question_anchors("Is Pilates better than McKenzie training for chronic low back pain?")
    assert within_one_arm(MCKENZIE_WITHIN, anchors)
    assert not within_one_arm(PILATES_MCKENZIE_BETWEEN, anchors)
    assert not within_one_arm("Pilates reduced pain more than McKenzie training.", anchors)  # a comparison
    assert not within_one_arm("McKenzie training reduced pain.", anchors)  # an effect, read as against the other arm
    assert not within_one_arm("6 weeks of Pilates and McKenzie training both reduced pain.", anchors)  # both arms named
    assert not within_one_arm("6 weeks of exercise reduced pain.", anchors)  # neither arm
    one_arm = question_anchors("Does McKenzie training reduce pain in chronic low back pain?")
    assert not within_one_arm(MCKENZIE_WITHIN, one_arm)  # an effect question has one arm: its change answers it
    usual_care = question_anchors("Is exercise therapy better than usual care for chronic low back pain?")
    assert not within_one_arm("After 6 weeks, exercise therapy decreased pain.", usual_care)  # vs control
    add_on = Anchors(
        intervention="thalidomide added to melphalan and prednisone", comparator="melphalan and prednisone"
    )
    assert not within_one_arm(
        "After 12 months of thalidomide, response rates improved.", add_on
    )  # vs what it is added to


def _answer(
    core: list[tuple[int, str]], grades: dict[int, str], docs: dict[int, str], fields: dict | None = None
) -> dict:
    return {
        "core_answer": [{"statement": f"statement {n}", "citations": [n], "stance": st} for n, st in core],
        "citations": [
            {"n": n, "grade": g, "doc_id": docs[n], "window_id": f"w{n}", "condition": "LBP"} for n, g in grades.items()
        ],
        "pico_comparison": {"fields": fields or {}},
    }


def test_certainty_starts_from_the_design_and_names_every_downgrade():
    trials = _answer([(1, "supports"), (2, "supports")], {1: "C", 2: "C"}, {1: "a", 2: "b"})
    assess_certainty(trials, "LBP", {"w1", "w2"})
    assert trials["certainty"]["level"] == "high" and trials["certainty"]["downgraded_for"] == []
    assert trials["certainty"]["starts_from"].startswith(
        "randomised trials (grade C, the best grade supporting the bottom"
    )

    mixed = _answer(
        [(1, "supports"), (2, "contradicts")],
        {1: "C", 2: "C", 3: "C"},
        {1: "a", 2: "b", 3: "c"},
        {"population": {"status": "mismatch", "question": "athletes", "closest_evidence": "older women"}},
    )
    assess_certainty(mixed, "LBP", {"w1"})  # two of three cited windows from other conditions
    reasons = mixed["certainty"]["downgraded_for"]
    assert [r.split(":")[0] for r in reasons] == ["indirectness", "indirectness", "inconsistency", "imprecision"]
    assert "athletes" in reasons[1] and "[2]" in reasons[2] and mixed["certainty"]["level"] == "very low"

    cohort = _answer([(1, "supports"), (2, "supports")], {1: "D", 2: "D"}, {1: "a", 2: "b"})
    assess_certainty(cohort, None, set())
    assert cohort["certainty"]["level"] == "low" and cohort["certainty"]["starts_from"].startswith("observational")


def test_evidence_as_well_graded_as_the_support_that_contradicts_it_downgrades_for_inconsistency():
    """The demo's NSAIDs answer read "certainty high; supported by 3 grade C, 1 grade D; contradicted by 2 grade C":
    the contradicting trials sat in the graded evidence, not the core, and only the core was read."""
    answer = _answer(
        [(1, "supports"), (2, "supports")], {1: "C", 2: "C", 3: "C", 4: "D"}, {1: "a", 2: "b", 3: "c", 4: "d"}
    )
    answer["evidence_by_grade"] = [
        {"grade": "C", "statements": [{"statement": "statement 3", "citations": [3], "stance": "contradicts"}]},
        {"grade": "D", "statements": [{"statement": "statement 4", "citations": [4], "stance": "contradicts"}]},
    ]
    assess_certainty(answer, "LBP", {"w1", "w2", "w3", "w4"})
    assert answer["certainty"]["level"] == "moderate"
    assert answer["certainty"]["downgraded_for"] == [
        "inconsistency: cited grade C or better evidence contradicts the bottom line ([3])"
    ]
    # a contradicting source graded below the support does not downgrade it
    answer["evidence_by_grade"] = answer["evidence_by_grade"][1:]
    assess_certainty(answer, "LBP", {"w1", "w2", "w3", "w4"})
    assert answer["certainty"]["level"] == "high" and answer["certainty"]["downgraded_for"] == []


def test_a_supporting_review_that_rates_its_evidence_starts_the_certainty_there():
    """A Cochrane review's "low-certainty evidence" is its authors' GRADE rating: the start, not "high"."""
    answer = _answer([(1, "supports"), (2, "supports")], {1: "B", 2: "C"}, {1: "review", 2: "trial"})
    answer["core_answer"][0]["statement"] = "Exercise may reduce pain slightly (low-certainty evidence)."
    assess_certainty(answer, "LBP", {"w1", "w2"})
    assert answer["certainty"]["level"] == "low" and answer["certainty"]["downgraded_for"] == []
    assert answer["certainty"]["starts_from"].endswith("low, the review's own rating")
    unrated = _answer([(1, "supports")], {1: "B"}, {1: "review"})
    assess_certainty(unrated, "LBP", {"w1"})
    assert unrated["certainty"]["level"] == "high"  # a review that states no rating starts from its design
    # the rating stated elsewhere in the review's cited windows (its conclusions, here its second window): the
    # lowest of them; a trial's window rates nothing
    two_windows = _answer([(1, "supports")], {1: "B", 2: "B", 3: "C"}, {1: "review", 2: "review", 3: "trial"})
    passages = {
        "w1": "Taping did not reduce pain more than no taping (MD -0.15; 95% CI -1.15 to 0.85).",
        "w2": "The evidence is low-quality for pain; for function it is moderate quality.",
        "w3": "Very low quality evidence was all that earlier trials gave.",
    }
    assess_certainty(two_windows, "LBP", {"w1", "w2", "w3"}, passages=passages)
    assert two_windows["certainty"]["level"] == "low"
    assert two_windows["certainty"]["starts_from"].endswith("the lowest rating the review's cited windows state")
    # a statement that words its rating as Cochrane's reviews do: "probably" is moderate, "may" low, before the
    # lowest rating the windows state elsewhere (the demo's insoles answer read "high" from "probably reduces")
    for statement, level in (
        (
            "The use of shock absorbing inserts in footwear probably reduces the incidence of stress fractures.",
            "moderate",
        ),
        ("Subacromial corticosteroid injection may be beneficial although its effect may be small.", "low"),
    ):
        worded = _answer([(1, "supports")], {1: "B"}, {1: "review"})
        worded["core_answer"][0]["statement"] = statement
        assess_certainty(worded, "LBP", {"w1"}, passages={"w1": "Very low quality evidence for function."})
        assert worded["certainty"]["level"] == level, worded["certainty"]
        assert "as the review words its finding" in worded["certainty"]["starts_from"]
    # a review that calls its evidence weak without rating it (the demo's foot orthoses answer read "high")
    qualified = _answer([(1, "supports")], {1: "B"}, {1: "review"})
    qualified["core_answer"][0]["statement"] = (
        "While not robust, the available evidence does not reveal any clear advantage of foot orthoses over simple "
        "insoles or physiotherapy for patellofemoral pain."
    )
    assess_certainty(qualified, "PFP", {"w1"})
    assert qualified["certainty"]["level"] == "low"
    assert qualified["certainty"]["starts_from"].endswith('as the review qualifies its evidence ("not robust")')


def test_a_shared_window_is_labelled_with_the_questions_condition():
    """A patellofemoral pain trial's window is in PFP and MACL; its first index row said MACL."""
    citations = [
        {"n": 1, "window_id": "w1", "condition": "MACL"},  # shared with PFP
        {"n": 2, "window_id": "w2", "condition": "MACL"},  # MACL only
    ]
    label_shared_windows(citations, "PFP", {"w1"})
    assert [c["condition"] for c in citations] == ["PFP", "MACL"]
    label_shared_windows(citations, None, set())  # a question with no condition changes nothing
    assert [c["condition"] for c in citations] == ["PFP", "MACL"]


def test_certainty_starts_from_the_sources_that_support_the_bottom_line():
    """A neutral systematic review beside one supporting cohort study: the certainty starts from the
    cohort (observational, low), not from the review, and one study is imprecise."""
    answer = _answer([(1, "neutral"), (2, "supports")], {1: "B", 2: "D"}, {1: "review", 2: "cohort"})
    answer["evidence_by_grade"] = [
        {"grade": "B", "statements": [{"statement": "s", "citations": [1], "stance": "neutral"}]},
        {"grade": "D", "statements": [{"statement": "s", "citations": [2], "stance": "supports"}]},
    ]
    assess_certainty(answer, None, set())
    certainty = answer["certainty"]
    assert certainty["starts_from"].startswith("observational studies (grade D, the best grade supporting")
    assert certainty["downgraded_for"] == ["imprecision: the verdict rests on a single study"]
    assert certainty["level"] == "very low"
    answer["core_answer"][0]["stance"] = "supports"  # the review now supports too: it sets the start
    answer["evidence_by_grade"][0]["statements"][0]["stance"] = "supports"
    assess_certainty(answer, None, set())
    assert (
        answer["certainty"]["starts_from"].startswith("systematic reviews") and answer["certainty"]["level"] == "high"
    )


def test_no_cited_finding_is_very_low_and_says_why():
    empty = _answer([], {1: "C"}, {1: "a"})
    assess_certainty(empty, None, set())
    assert empty["certainty"]["level"] == "very low" and empty["certainty"]["downgraded_for"]


def test_a_bottom_line_that_no_cited_statement_supports_is_downgraded_for_indirectness():
    """Sources that take no side (their statements do not name the question's arms) cannot carry a
    high certainty: the demo's question once read 'certainty high; supported by none'."""
    unsupported = _answer([(1, "neutral"), (2, "neutral")], {1: "C", 2: "C"}, {1: "a", 2: "b"})
    assess_certainty(unsupported, None, set())
    certainty = unsupported["certainty"]
    assert certainty["level"] == "moderate" and certainty["downgraded_for"] == [
        "indirectness: no cited statement that names the question's intervention or comparator supports the bottom line"
    ]


def test_an_undecided_bottom_line_that_no_source_supports_is_very_low():
    """The demo answered "Are topical NSAIDs effective for knee osteoarthritis pain?" with "Uncertain: the
    top-ranked review does not settle it (certainty moderate; supported by none)": a certainty about an answer
    that no cited source gives."""
    unsupported = _answer([(1, "neutral"), (2, "neutral")], {1: "B", 2: "C"}, {1: "a", 2: "b"})
    assess_certainty(unsupported, None, set(), undecided="the top-ranked review does not settle it")
    certainty = unsupported["certainty"]
    assert certainty["level"] == "very low"
    assert certainty["starts_from"] == "no cited finding that takes a side on the question"
    assert certainty["downgraded_for"] == ["imprecision: the top-ranked review does not settle it"]


def test_graded_findings_that_name_the_question_lead_the_core_and_trials_keep_the_scorers_order():
    from ebm_platform.retrieval.answer import _core_rank

    anchors = Anchors(intervention="exercise therapy", comparator="usual care", outcome="pain")
    review = "Exercise therapy reduced pain compared with usual care (moderate certainty)."
    trial = "Pain fell more in group A than in group B (p = 0.01)."  # names neither arm: kept in score order
    a, b, c = ({"grade": g, "title": "A study"} for g in "ABC")
    assert _core_rank(a, review, anchors) < _core_rank(b, review, anchors) < _core_rank(c, review, anchors)
    assert _core_rank(c, review, anchors) == _core_rank(c, trial, anchors)
    assert _core_rank(b, trial, anchors) == _core_rank(c, trial, anchors)  # a review about something else
    titled = {"grade": "B", "title": "Exercise therapy for chronic low back pain"}
    assert _core_rank(titled, trial, anchors) < _core_rank(c, trial, anchors)  # its title names the arms


def test_an_unanswered_bottom_line_is_very_low_and_names_why():
    unanswered = _answer([(1, "neutral")], {1: "C"}, {1: "a"})
    reason = "no cited PFP finding (nor the title of its source) mentions 'hip'"
    assess_certainty(unanswered, "PFP", {"w1"}, reason)
    assert unanswered["certainty"]["level"] == "very low"
    assert unanswered["certainty"]["starts_from"] == "no cited finding about the question"
    assert unanswered["certainty"]["downgraded_for"] == [
        "indirectness: no cited PFP finding (nor the title of its source) mentions 'hip'"
    ]


def test_a_guideline_that_rates_its_own_evidence_starts_the_certainty_there():
    """WHO's "conditional recommendation in favour of use, low certainty evidence": the answer's
    certainty cannot read high when the guideline it rests on rates its evidence low."""
    answer = _answer([(1, "supports")], {1: "A"}, {1: "who"})
    answer["core_answer"][0]["statement"] = (
        "A structured exercise therapy or programme may be offered to adults with CPLBP (Strength of "
        "recommendation: conditional recommendation in favour of use, low certainty evidence)."
    )
    assess_certainty(answer, None, set())
    certainty = answer["certainty"]
    assert certainty["level"] == "low" and certainty["downgraded_for"] == []
    assert certainty["starts_from"].startswith(
        "a guideline recommendation (grade A, the best grade supporting the bottom line): low, the guideline's own rating"
    )
    # VA/DoD's rating, stated in the recommendation's discussion and carried beside its strength
    answer["core_answer"][0]["statement"] = (
        "We suggest exercise (Strength of recommendation: Weak for, the Work Group's confidence in the quality "
        "of the evidence: very low; New-replaced)."
    )
    assess_certainty(answer, None, set())
    assert answer["certainty"]["level"] == "very low" and "own rating" in answer["certainty"]["starts_from"]
    # a strength without a rating of the evidence ("Weak for") leaves the design's start
    answer["core_answer"][0]["statement"] = "We suggest exercise (Strength of recommendation: Weak for)."
    assess_certainty(answer, None, set())
    assert answer["certainty"]["level"] == "high" and "own rating" not in answer["certainty"]["starts_from"]


def test_a_guideline_recommendation_on_the_question_takes_the_last_place_of_the_budget():
    """SR-RAG's evidence budget: when none of the twelve best is a guideline recommendation on the
    question's arms, the best-ranked guideline window of the question's condition that recommends on
    them replaces the twelfth (also when a guideline's background is cited); never a guideline of
    another condition, nor one that recommends something else."""
    from ebm_platform.retrieval.pipeline import Candidate
    from ebm_platform.retrieval.sr_rag import with_syntheses

    def window(n: int, grade: str, text: str, condition: str = "LBP") -> Candidate:
        return Candidate(f"w{n}", {"grade": grade, "text": text, "condition": condition})

    trial = "Pain fell more with Pilates than with McKenzie training after six weeks (p < 0.05)."
    ranked = [window(n, "C", trial) for n in range(12)]
    off_topic = window(20, "A", "We suggest against opioids for patients with low back pain (Strength: Weak against).")
    other_condition = window(21, "A", "We suggest exercise therapy for patients with neck pain (Weak for).", "NP")
    on_arms = window(22, "A", "For patients with low back pain, we suggest exercise therapy (Strength: Weak for).")
    anchors = Anchors(intervention="exercise therapy", outcome="chronic low back pain")
    chosen = with_syntheses([*ranked, off_topic, other_condition, on_arms], 12, anchors, "LBP")
    assert len(chosen) == 12 and chosen[:11] == ranked[:11] and chosen[-1] is on_arms
    assert with_syntheses([*ranked, off_topic, other_condition], 12, anchors, "LBP") == ranked
    assert with_syntheses([*ranked, other_condition], 12, anchors, None)[-1] is other_condition  # no condition asked
    background = [*ranked[:11], window(11, "A", "Guideline background.")]  # cited, but recommends nothing on the arms
    assert with_syntheses([*background, on_arms], 12, anchors, "LBP") == [*ranked[:11], on_arms]
    cited = [*ranked[:11], on_arms]
    assert with_syntheses([*cited, window(23, "A", on_arms.row["text"])], 12, anchors, "LBP") == cited  # already cited


def test_a_reviews_finding_on_the_question_takes_the_place_before_the_guidelines():
    """The demo's "Does exercise reduce pain in knee osteoarthritis?" cited twelve windows of three trials and
    ranked Cochrane's CD004376 ("land-based therapeutic exercise has at least short term benefit in terms of
    reduced knee pain") fifteenth: when none of the twelve is a systematic review's finding about the question,
    the best-ranked one of the question's condition takes the place before the guideline's; not a review of
    another question, nor one whose finding names only some of the arms' words, nor any when the question
    names no condition."""
    from ebm_platform.retrieval.pipeline import Candidate
    from ebm_platform.retrieval.sr_rag import with_syntheses

    def window(n: int, grade: str, text: str, condition: str = "MACL") -> Candidate:
        return Candidate(f"w{n}", {"grade": grade, "text": text, "condition": condition, "section": "T > Results"})

    trial = "We found no improvement in pain with a six-week high-intensity exercise program (p = 0.4)."
    ranked = [window(n, "C", trial) for n in range(12)]
    other = window(20, "B", "Aquatic therapy had no effect on pain compared with control (SMD -0.1).")
    compared = window(21, "B", "Manual therapy reduced pain more than exercise therapy (SMD -0.4).")
    review = window(22, "B", "Land-based therapeutic exercise reduced knee pain (SMD -0.40, 95% CI -0.50 to -0.30).")
    anchors = Anchors(intervention="exercise", outcome="pain", condition="knee osteoarthritis")
    chosen = with_syntheses([*ranked, other, review], 12, anchors, "MACL")
    assert chosen == [*ranked[:11], review]
    assert with_syntheses([*ranked, other], 12, anchors, "MACL") == ranked
    assert with_syntheses([*ranked, window(23, "B", review.row["text"], "LBP")], 12, anchors, "MACL") == ranked
    assert with_syntheses([*ranked, review], 12, anchors, None) == ranked  # the question names no condition
    assert with_syntheses([*ranked, review], 12, anchors, "MACL", review=False) == ranked  # the ablation
    manual = Anchors(intervention="manual therapy", comparator="exercise therapy", outcome="pain")
    assert with_syntheses([*ranked, compared], 12, manual, "MACL")[-1] is compared
    assert with_syntheses([*ranked, review], 12, manual, "MACL") == ranked  # names exercise, not manual therapy
    # with a guideline's recommendation on the arms too: the review before it, the guideline last
    guideline = window(24, "A", "For patients with knee osteoarthritis we recommend exercise (Strength: Strong for).")
    assert with_syntheses([*ranked, review, guideline], 12, anchors, "MACL") == [*ranked[:10], review, guideline]


def test_a_guideline_that_rates_its_own_evidence_sets_the_certainty_whatever_the_order():
    """Two supporting guidelines, one stating only its strength (VA/DoD "Weak for"), one rating its evidence
    (WHO "low certainty evidence"): the rating is the start in either order (the demo's exercise answer
    read "high" with the VA/DoD recommendation quoted first and "low" the other way round)."""
    vadod = "We suggest a structured exercise program (Strength of recommendation: Weak for; New-replaced)."
    who = (
        "Exercise therapy may be offered (Strength of recommendation: conditional recommendation in favour of use, "
        "low certainty evidence)."
    )
    for first, second in ((vadod, who), (who, vadod)):
        answer = _answer([(1, "supports"), (2, "supports")], {1: "A", 2: "A"}, {1: "vadod", 2: "who"})
        answer["core_answer"][0]["statement"], answer["core_answer"][1]["statement"] = first, second
        assess_certainty(answer, None, set())
        assert answer["certainty"]["level"] == "low"
        assert "low, the guideline's own rating" in answer["certainty"]["starts_from"]


def test_the_findings_rules_read_evidence_inference_results_as_findings_and_most_else_not(datasets_dir):
    """`ebm eval findings` on a few real articles: annotated evidence sentences (trial results) are read as
    findings far more often than the articles' other sentences."""
    from ebm_platform.evaluation.findings_eval import evaluate_findings

    report = evaluate_findings(datasets_dir, "validation", articles=8)
    evidence, other = report["evidence_sentences"], report["other_sentences"]
    assert report["articles"] == 8 and evidence["n"] > 0 and other["n"] > evidence["n"]
    assert evidence["read_as_findings"] > 0.6 and other["read_as_findings"] < 0.4
